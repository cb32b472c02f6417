package dev.mx.rl;

import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRegistration;
import java.util.List;
import java.util.Optional;

/**
 * Where RefitService keeps its records. Each mutating method is one of SPEC.md section 11's atomic
 * steps (checks and writes indivisible, a refusal as a {@link RefitException} of the reference's
 * kind); the reads are plain reads. Requests reach a backend already validated ({@link
 * RefitControlPlane}). Implementations: {@code memory:} (one lock) and {@code redis://} (one Lua
 * script per step, so several servers over one Redis behave as one).
 */
public interface RefitBackend extends AutoCloseable {

  /** What {@link #createVersion} found. */
  enum CreateOutcome {
    CREATED,
    /** The idempotency scope was reserved before: {@link #reservedUid} says by which version. */
    EXISTING,
    /** Another version already has this uid: pick another. */
    COLLISION
  }

  /**
   * Where this backend keeps its records, for logs ({@code memory:}, {@code redis://host:port}).
   */
  String describe();

  /** The version with this uid, in its current state. */
  Optional<WeightVersion> version(String uid);

  /**
   * Atomically: when {@code (model_name, idempotency_key)} is unreserved and the uid unused, stores
   * {@code version} (state STAGING) and reserves the scope for it.
   */
  CreateOutcome createVersion(WeightVersion version);

  /** The uid reserved for {@code (modelName, idempotencyKey)}, if any. */
  Optional<String> reservedUid(String modelName, String idempotencyKey);

  /**
   * Registers or refreshes {@code worker} for {@code ttlMillis}; returns the new expiry. Refuses a
   * live registration of the same id with another role or model.
   */
  long registerWorker(WorkerRegistration worker, long ttlMillis);

  /** Stores one publication (SPEC.md section 3.5 B1-B7); returns the version's state after it. */
  WeightVersionState publishShard(WeightVersionShard shard);

  /** Every publication of the version in storage order, or empty when the version is unknown. */
  Optional<List<WeightVersionShard>> shards(String versionId);

  /** The publication of {@code sourceSlotId} by {@code workerId}, if any. */
  Optional<WeightVersionShard> shard(String versionId, String workerId, String sourceSlotId);

  /** READY to RELEASING; RELEASING stays (SPEC.md section 3.4). */
  void deleteVersion(String uid);

  /**
   * Evicts {@code expected} if it is still stored byte for byte, the version is RELEASING, its
   * publisher live and no live lease left (SPEC.md section 3.7 B3-B9).
   */
  void deleteShard(WeightVersionShard expected);

  /** Acquires or renews a lease (SPEC.md section 3.8); returns its new expiry. */
  long registerLease(String leaseId, String versionId, String workerId, long ttlMillis);

  /** The live lease, if any. */
  Optional<VersionLease> lease(String versionId, String leaseId);

  /** Drops a lease; false when none was live (SPEC.md section 3.9). */
  boolean deleteLease(String versionId, String leaseId, String workerId);

  /** Releases connections; idempotent. */
  @Override
  void close();

  /**
   * A publication's key within its version: {@code "<UTF-8 byte length of worker_id>:<worker_id>
   * <source_slot_id>"}, unambiguous for any ids (SPEC.md section 11).
   */
  static String publicationKey(String workerId, String sourceSlotId) {
    return workerId.getBytes(java.nio.charset.StandardCharsets.UTF_8).length
        + ":"
        + workerId
        + sourceSlotId;
  }
}
