package dev.mx.rl;

import static dev.mx.rl.RefitText.debugQuoted;
import static dev.mx.rl.RefitText.q;

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
import dev.mx.rl.proto.RegisterVersionLeaseRequest;
import dev.mx.rl.proto.RegisterWorkerRequest;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * RefitService's semantics without the transport: the service-level checks of SPEC.md section 3 in
 * the reference's order, then the backend's atomic steps, then the responses. One instance may
 * serve many threads; all state lives in the backend.
 */
public final class RefitControlPlane {
  /** How many uids are tried before RESOURCE_EXHAUSTED (SPEC.md section 3.2). */
  static final int UID_ATTEMPTS = 5;

  private static final Comparator<WeightVersionShard> LIST_ORDER =
      Comparator.comparing(WeightVersionShard::getSourceSlotId, RefitText.UTF8_ORDER)
          .thenComparing(WeightVersionShard::getWorkerId, RefitText.UTF8_ORDER);

  private final RefitBackend backend;
  private final RefitClock clock;
  private final VersionUids uids;

  public RefitControlPlane(RefitBackend backend, RefitClock clock, VersionUids uids) {
    this.backend = backend;
    this.clock = clock;
    this.uids = uids;
  }

  public RefitBackend backend() {
    return backend;
  }

  private static void require(String value, String field, String subject) {
    if (RefitText.isBlank(value)) {
      throw RefitFailure.REQUIRED.raise(field, subject);
    }
  }

  // ---- workers -------------------------------------------------------------------------------

  public WorkerRegistration registerWorker(RegisterWorkerRequest request) {
    if (!request.hasWorker()) {
      throw RefitFailure.WORKER_REQUIRED.raise("");
    }
    WorkerRegistration w = request.getWorker();
    require(w.getWorkerId(), "worker.worker_id", "");
    String subject = "worker " + q(w.getWorkerId());
    require(w.getModelName(), "worker.model_name", subject);
    if (w.getRole() != WorkerRole.WORKER_ROLE_TRAINER
        && w.getRole() != WorkerRole.WORKER_ROLE_GENERATOR) {
      throw RefitFailure.ROLE_UNSPECIFIED.raise(subject);
    }
    if (request.getTtlSeconds() == 0) {
      throw RefitFailure.TTL_ZERO.raise(subject);
    }
    long expiry = backend.registerWorker(w, ttlMillis(request.getTtlSeconds()));
    return w.toBuilder().setExpiresAtUnixMs(expiry).build();
  }

  private static long ttlMillis(int ttlSeconds) {
    return Integer.toUnsignedLong(ttlSeconds) * 1000L;
  }

  // ---- versions ------------------------------------------------------------------------------

  public WeightVersion createVersion(CreateWeightVersionRequest r) {
    require(r.getModelName(), "model_name", "");
    String subject =
        "model " + q(r.getModelName()) + ", idempotency_key " + q(r.getIdempotencyKey());
    require(r.getIdempotencyKey(), "idempotency_key", subject);
    WeightPayloadFormat format = r.getPayloadFormat();
    if (format == WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR && r.hasBaseVersionId()) {
      throw RefitFailure.BASE_FOR_FULL_TENSOR.raise(subject);
    }
    if (format == WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA && !r.hasBaseVersionId()) {
      throw RefitFailure.BASE_MISSING_FOR_XOR_DELTA.raise(subject);
    }
    if (format != WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR
        && format != WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA) {
      throw RefitFailure.FORMAT_UNSPECIFIED.raise(subject);
    }
    if (r.getExpectedSourceSlotsCount() == 0) {
      throw RefitFailure.SLOTS_EMPTY.raise(subject);
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < r.getExpectedSourceSlotsCount(); i++) {
      String slot = r.getExpectedSourceSlots(i);
      if (RefitText.isBlank(slot)) {
        throw RefitFailure.REQUIRED.raise(
            "expected_source_slots entry", subject + ", expected_source_slots[" + i + "]");
      }
      if (!seen.add(slot)) {
        throw RefitFailure.SLOTS_DUPLICATE.raise(subject + ", slot " + q(slot));
      }
    }
    if (format == WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_XOR_DELTA) {
      checkXorBase(r, subject);
    }
    for (int attempt = 0; attempt < UID_ATTEMPTS; attempt++) {
      String uid = uids.next(r, attempt);
      WeightVersion.Builder v =
          WeightVersion.newBuilder()
              .setUid(uid)
              .setModelName(r.getModelName())
              .setIdempotencyKey(r.getIdempotencyKey())
              .setPayloadFormat(format)
              .addAllExpectedSourceSlots(r.getExpectedSourceSlotsList())
              .setLayoutSignature("")
              .setState(WeightVersionState.WEIGHT_VERSION_STATE_STAGING)
              .setCreatedAtUnixMs(clock.nowMillis());
      if (r.hasVersionNumber()) {
        v.setVersionNumber(r.getVersionNumber());
      }
      if (r.hasBaseVersionId()) {
        v.setBaseVersionId(r.getBaseVersionId());
      }
      switch (backend.createVersion(v.build())) {
        case CREATED -> {
          return backend
              .version(uid)
              .orElseThrow(
                  () -> RefitFailure.VERSION_UID_NOT_FOUND.raise(debugQuoted(uid), subject));
        }
        case EXISTING -> {
          return replay(r, subject);
        }
        case COLLISION -> {
          // another version has this uid: try the next
        }
      }
    }
    throw RefitFailure.UID_EXHAUSTED.raise(subject);
  }

  private void checkXorBase(CreateWeightVersionRequest r, String subject) {
    String baseId = r.getBaseVersionId();
    WeightVersion base =
        backend
            .version(baseId)
            .orElseThrow(
                () ->
                    RefitFailure.VERSION_UID_NOT_FOUND.raise(
                        debugQuoted(baseId), subject + ", base version " + q(baseId)));
    if (!base.getModelName().equals(r.getModelName())
        || base.getState() != WeightVersionState.WEIGHT_VERSION_STATE_READY) {
      throw RefitFailure.XOR_BASE_NOT_READY.raise(
          subject
              + ", base version "
              + q(baseId)
              + " of model "
              + q(base.getModelName())
              + " is "
              + base.getState());
    }
  }

  /**
   * A request for a reserved scope: the stored version when the request equals it (SPEC.md section
   * 5).
   */
  private WeightVersion replay(CreateWeightVersionRequest r, String subject) {
    String uid =
        backend
            .reservedUid(r.getModelName(), r.getIdempotencyKey())
            .orElseThrow(
                () ->
                    RefitFailure.INTERNAL.raise(
                        "Refit metadata record is missing the idempotency reservation", subject));
    WeightVersion stored =
        backend
            .version(uid)
            .orElseThrow(
                () ->
                    RefitFailure.INTERNAL.raise(
                        "Refit metadata record is missing weight version " + uid, subject));
    boolean same =
        stored.getModelName().equals(r.getModelName())
            && stored.hasVersionNumber() == r.hasVersionNumber()
            && stored.getVersionNumber() == r.getVersionNumber()
            && stored.getPayloadFormat() == r.getPayloadFormat()
            && stored.hasBaseVersionId() == r.hasBaseVersionId()
            && stored.getBaseVersionId().equals(r.getBaseVersionId())
            && stored.getExpectedSourceSlotsList().equals(r.getExpectedSourceSlotsList());
    if (!same) {
      throw RefitFailure.IDEMPOTENCY_CONFLICT.raise(subject + ", reserved by version " + q(uid));
    }
    return stored;
  }

  public WeightVersion getVersion(GetWeightVersionRequest r) {
    require(r.getUid(), "uid", "");
    return backend
        .version(r.getUid())
        .orElseThrow(
            () ->
                RefitFailure.VERSION_UID_NOT_FOUND.raise(
                    debugQuoted(r.getUid()), "version " + q(r.getUid())));
  }

  public WeightVersion deleteVersion(DeleteWeightVersionRequest r) {
    require(r.getUid(), "uid", "");
    backend.deleteVersion(r.getUid());
    return getVersion(GetWeightVersionRequest.newBuilder().setUid(r.getUid()).build());
  }

  // ---- shards --------------------------------------------------------------------------------

  public CreateWeightVersionShardResponse publishShard(CreateWeightVersionShardRequest r) {
    if (!r.hasShard()) {
      throw RefitFailure.SHARD_REQUIRED.raise("");
    }
    WeightVersionShard s = r.getShard();
    require(s.getVersionId(), "shard.version_id", "");
    String subject = "version " + q(s.getVersionId());
    require(s.getSourceSlotId(), "shard.source_slot_id", subject);
    subject += ", slot " + q(s.getSourceSlotId());
    require(s.getWorkerId(), "shard.worker_id", subject);
    subject += ", worker " + q(s.getWorkerId());
    require(s.getManifestDigest(), "shard.manifest_digest", subject);
    require(s.getManifestEndpoint(), "shard.manifest_endpoint", subject);
    require(s.getTransport(), "shard.transport", subject);
    String where = subject;
    WeightVersion before =
        backend
            .version(s.getVersionId())
            .orElseThrow(
                () ->
                    RefitFailure.VERSION_UID_NOT_FOUND.raise(debugQuoted(s.getVersionId()), where));
    WeightVersionState after = backend.publishShard(s);
    return CreateWeightVersionShardResponse.newBuilder()
        .setShard(s)
        .setVersion(before.toBuilder().setState(after))
        .build();
  }

  public ListWeightVersionShardsResponse listShards(ListWeightVersionShardsRequest r) {
    require(r.getVersionId(), "version_id", "");
    List<WeightVersionShard> shards =
        new ArrayList<>(
            backend
                .shards(r.getVersionId())
                .orElseThrow(
                    () ->
                        RefitFailure.VERSION_UID_NOT_FOUND.raise(
                            debugQuoted(r.getVersionId()), "version " + q(r.getVersionId()))));
    shards.sort(LIST_ORDER);
    return ListWeightVersionShardsResponse.newBuilder().addAllShards(shards).build();
  }

  public DeleteWeightVersionShardResponse deleteShard(DeleteWeightVersionShardRequest r) {
    require(r.getVersionId(), "version_id", "");
    String subject = "version " + q(r.getVersionId());
    require(r.getSourceSlotId(), "source_slot_id", subject);
    subject += ", slot " + q(r.getSourceSlotId());
    require(r.getWorkerId(), "worker_id", subject);
    subject += ", worker " + q(r.getWorkerId());
    String where = subject;
    WeightVersionShard stored =
        backend
            .shard(r.getVersionId(), r.getWorkerId(), r.getSourceSlotId())
            .orElseThrow(() -> RefitFailure.SHARD_NOT_FOUND.raise(where));
    if (!stored.getWorkerId().equals(r.getWorkerId())) {
      throw RefitFailure.NOT_PUBLISHER.raise(subject);
    }
    backend.deleteShard(stored);
    return DeleteWeightVersionShardResponse.newBuilder().setDeleted(true).build();
  }

  // ---- leases --------------------------------------------------------------------------------

  public VersionLease registerLease(RegisterVersionLeaseRequest r) {
    require(r.getVersionId(), "version_id", "");
    String subject = "version " + q(r.getVersionId());
    require(r.getWorkerId(), "worker_id", subject);
    subject += ", worker " + q(r.getWorkerId());
    if (r.getTtlSeconds() == 0) {
      throw RefitFailure.TTL_ZERO.raise(subject);
    }
    String leaseId = VersionUids.leaseId(r.getVersionId(), r.getWorkerId());
    backend.registerLease(leaseId, r.getVersionId(), r.getWorkerId(), ttlMillis(r.getTtlSeconds()));
    String where = subject + ", lease " + q(leaseId);
    return backend
        .lease(r.getVersionId(), leaseId)
        .orElseThrow(() -> RefitFailure.LEASE_NOT_FOUND.raise(debugQuoted(leaseId), where));
  }

  public DeleteVersionLeaseResponse deleteLease(DeleteVersionLeaseRequest r) {
    require(r.getVersionId(), "version_id", "");
    String subject = "version " + q(r.getVersionId());
    require(r.getLeaseId(), "lease_id", subject);
    subject += ", lease " + q(r.getLeaseId());
    require(r.getWorkerId(), "worker_id", subject);
    boolean deleted = backend.deleteLease(r.getVersionId(), r.getLeaseId(), r.getWorkerId());
    return DeleteVersionLeaseResponse.newBuilder().setDeleted(deleted).build();
  }
}
