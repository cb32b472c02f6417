package dev.mx.rl;

import dev.mx.rl.proto.CreateWeightVersionRequest;
import dev.mx.rl.proto.CreateWeightVersionShardRequest;
import dev.mx.rl.proto.CreateWeightVersionShardResponse;
import dev.mx.rl.proto.DeleteVersionLeaseRequest;
import dev.mx.rl.proto.DeleteVersionLeaseResponse;
import dev.mx.rl.proto.DeleteWeightVersionRequest;
import dev.mx.rl.proto.DeleteWeightVersionShardRequest;
import dev.mx.rl.proto.DeleteWeightVersionShardResponse;
import dev.mx.rl.proto.GetWeightVersionRequest;
import dev.mx.rl.proto.ListWeightVersionShardsRequest;
import dev.mx.rl.proto.ListWeightVersionShardsResponse;
import dev.mx.rl.proto.RefitServiceGrpc;
import dev.mx.rl.proto.RegisterVersionLeaseRequest;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WorkerRegistration;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** RefitService over gRPC: each call runs on {@link RefitControlPlane} and answers its outcome. */
final class RefitServiceImpl extends RefitServiceGrpc.RefitServiceImplBase {
  private static final Logger LOG = LoggerFactory.getLogger(RefitServiceImpl.class);

  private final RefitControlPlane plane;

  RefitServiceImpl(RefitControlPlane plane) {
    this.plane = plane;
  }

  static <Q, R> void answer(String rpc, Q request, StreamObserver<R> out, Function<Q, R> handler) {
    R response;
    try {
      response = handler.apply(request);
    } catch (RefitException e) {
      LOG.debug("{} refused: {}", rpc, e.getMessage());
      out.onError(e.toStatus());
      return;
    } catch (RuntimeException e) {
      LOG.warn("{} failed", rpc, e);
      out.onError(
          Status.INTERNAL
              .withDescription(String.valueOf(e.getMessage()))
              .withCause(e)
              .asException());
      return;
    }
    out.onNext(response);
    out.onCompleted();
  }

  @Override
  public void createWeightVersion(
      CreateWeightVersionRequest request, StreamObserver<WeightVersion> out) {
    answer("CreateWeightVersion", request, out, plane::createVersion);
  }

  @Override
  public void getWeightVersion(GetWeightVersionRequest request, StreamObserver<WeightVersion> out) {
    answer("GetWeightVersion", request, out, plane::getVersion);
  }

  @Override
  public void deleteWeightVersion(
      DeleteWeightVersionRequest request, StreamObserver<WeightVersion> out) {
    answer("DeleteWeightVersion", request, out, plane::deleteVersion);
  }

  @Override
  public void registerWorker(
      RegisterWorkerRequest request, StreamObserver<WorkerRegistration> out) {
    answer("RegisterWorker", request, out, plane::registerWorker);
  }

  @Override
  public void createWeightVersionShard(
      CreateWeightVersionShardRequest request,
      StreamObserver<CreateWeightVersionShardResponse> out) {
    answer("CreateWeightVersionShard", request, out, plane::publishShard);
  }

  @Override
  public void listWeightVersionShards(
      ListWeightVersionShardsRequest request, StreamObserver<ListWeightVersionShardsResponse> out) {
    answer("ListWeightVersionShards", request, out, plane::listShards);
  }

  @Override
  public void deleteWeightVersionShard(
      DeleteWeightVersionShardRequest request,
      StreamObserver<DeleteWeightVersionShardResponse> out) {
    answer("DeleteWeightVersionShard", request, out, plane::deleteShard);
  }

  @Override
  public void registerVersionLease(
      RegisterVersionLeaseRequest request, StreamObserver<VersionLease> out) {
    answer("RegisterVersionLease", request, out, plane::registerLease);
  }

  @Override
  public void deleteVersionLease(
      DeleteVersionLeaseRequest request, StreamObserver<DeleteVersionLeaseResponse> out) {
    answer("DeleteVersionLease", request, out, plane::deleteLease);
  }
}
