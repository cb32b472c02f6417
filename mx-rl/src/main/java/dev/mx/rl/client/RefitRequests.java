package dev.mx.rl.client;

import dev.mx.rl.proto.CreateWeightVersionRequest;
import dev.mx.rl.proto.DeleteVersionLeaseRequest;
import dev.mx.rl.proto.DeleteWeightVersionRequest;
import dev.mx.rl.proto.DeleteWeightVersionShardRequest;
import dev.mx.rl.proto.GetWeightVersionRequest;
import dev.mx.rl.proto.GetWeightVersionShardManifestRequest;
import dev.mx.rl.proto.ListWeightVersionShardsRequest;
import dev.mx.rl.proto.RegisterVersionLeaseRequest;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Every request of the control plane built the way ModelExpress's Python clients build it: only
 * what the caller gave, optional fields absent unless given, no {@code expires_at_unix_ms} in a
 * registration. Encoded, they are the clients' bytes (the golden vectors check this).
 */
public final class RefitRequests {
  private RefitRequests() {}

  public static RegisterWorkerRequest registerWorker(
      String workerId, WorkerRole role, String modelName, int ttlSeconds) {
    return RegisterWorkerRequest.newBuilder()
        .setWorker(
            WorkerRegistration.newBuilder()
                .setWorkerId(workerId)
                .setRole(role)
                .setModelName(modelName))
        .setTtlSeconds(ttlSeconds)
        .build();
  }

  public static CreateWeightVersionRequest createVersion(
      String modelName,
      String idempotencyKey,
      WeightPayloadFormat format,
      List<String> expectedSourceSlots,
      OptionalLong versionNumber,
      Optional<String> baseVersionId) {
    CreateWeightVersionRequest.Builder b =
        CreateWeightVersionRequest.newBuilder()
            .setModelName(modelName)
            .setIdempotencyKey(idempotencyKey)
            .setPayloadFormat(format)
            .addAllExpectedSourceSlots(expectedSourceSlots);
    versionNumber.ifPresent(b::setVersionNumber);
    baseVersionId.ifPresent(b::setBaseVersionId);
    return b.build();
  }

  public static GetWeightVersionRequest getVersion(String uid) {
    return GetWeightVersionRequest.newBuilder().setUid(uid).build();
  }

  public static DeleteWeightVersionRequest deleteVersion(String uid) {
    return DeleteWeightVersionRequest.newBuilder().setUid(uid).build();
  }

  public static ListWeightVersionShardsRequest listShards(String versionId) {
    return ListWeightVersionShardsRequest.newBuilder().setVersionId(versionId).build();
  }

  public static DeleteWeightVersionShardRequest deleteShard(
      String versionId, String sourceSlotId, String workerId) {
    return DeleteWeightVersionShardRequest.newBuilder()
        .setVersionId(versionId)
        .setSourceSlotId(sourceSlotId)
        .setWorkerId(workerId)
        .build();
  }

  public static RegisterVersionLeaseRequest registerLease(
      String versionId, String workerId, int ttlSeconds) {
    return RegisterVersionLeaseRequest.newBuilder()
        .setVersionId(versionId)
        .setWorkerId(workerId)
        .setTtlSeconds(ttlSeconds)
        .build();
  }

  public static DeleteVersionLeaseRequest deleteLease(
      String versionId, String leaseId, String workerId) {
    return DeleteVersionLeaseRequest.newBuilder()
        .setVersionId(versionId)
        .setLeaseId(leaseId)
        .setWorkerId(workerId)
        .build();
  }

  public static GetWeightVersionShardManifestRequest manifest(
      String versionId, String sourceSlotId) {
    return GetWeightVersionShardManifestRequest.newBuilder()
        .setVersionId(versionId)
        .setSourceSlotId(sourceSlotId)
        .build();
  }
}
