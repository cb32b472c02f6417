package dev.mx.rl;

import static dev.mx.rl.RefitText.q;

import com.google.protobuf.ByteString;
import dev.mx.rl.proto.GetWeightVersionShardManifestRequest;
import dev.mx.rl.proto.GetWeightVersionShardManifestResponse;
import dev.mx.rl.proto.RefitWorkerServiceGrpc;
import io.grpc.stub.StreamObserver;

/** RefitWorkerService: a trainer's manifests from its {@link ManifestBook}. */
final class RefitWorkerServiceImpl extends RefitWorkerServiceGrpc.RefitWorkerServiceImplBase {
  private final ManifestBook book;

  RefitWorkerServiceImpl(ManifestBook book) {
    this.book = book;
  }

  @Override
  public void getWeightVersionShardManifest(
      GetWeightVersionShardManifestRequest request,
      StreamObserver<GetWeightVersionShardManifestResponse> out) {
    RefitServiceImpl.answer(
        "GetWeightVersionShardManifest",
        request,
        out,
        r -> {
          byte[] m =
              book.get(r.getVersionId(), r.getSourceSlotId())
                  .orElseThrow(
                      () ->
                          RefitFailure.MANIFEST_NOT_FOUND.raise(
                              "version "
                                  + q(r.getVersionId())
                                  + ", slot "
                                  + q(r.getSourceSlotId())));
          return GetWeightVersionShardManifestResponse.newBuilder()
              .setManifest(ByteString.copyFrom(m))
              .setManifestDigest(VersionUids.sha256Hex(m))
              .build();
        });
  }
}
