package dev.mx.rl.memory;

import static dev.mx.rl.RefitText.q;

import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitFailure;
import dev.mx.rl.RefitText;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRegistration;
import dev.mx.rl.proto.WorkerRole;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * RefitService's records in this process. Each atomic step of SPEC.md section 11 runs under one
 * lock, so the reads around them are consistent; a record is live while its expiry lies after the
 * clock's now (an expiry equal to now is expired). Nothing survives the process: a restarted server
 * has lost every version, worker and lease.
 */
public final class MemoryRefitBackend implements RefitBackend {

  private record Worker(String workerId, WorkerRole role, String modelName, long expiresAt) {}

  /** A version with its coverage, publications (insertion order) and leases. */
  private static final class Entry {
    WeightVersion version;
    final Set<String> expected;
    final Set<String> coverage = new HashSet<>();
    final Map<String, WeightVersionShard> shards = new LinkedHashMap<>();
    final Map<String, VersionLease> leases = new HashMap<>();

    Entry(WeightVersion version) {
      this.version = version;
      this.expected = new HashSet<>(version.getExpectedSourceSlotsList());
    }
  }

  private final RefitClock clock;
  private final Map<String, Entry> versions = new HashMap<>();
  private final Map<String, String> reservations = new HashMap<>();
  private final Map<String, Worker> workers = new HashMap<>();

  public MemoryRefitBackend(RefitClock clock) {
    this.clock = clock;
  }

  @Override
  public String describe() {
    return "memory:";
  }

  private static String scope(String modelName, String idempotencyKey) {
    // The length prefix keeps (a:b, c) apart from (a, b:c).
    return modelName.length() + ":" + modelName + ":" + idempotencyKey;
  }

  @Override
  public synchronized Optional<WeightVersion> version(String uid) {
    Entry e = versions.get(uid);
    return e == null ? Optional.empty() : Optional.of(e.version);
  }

  @Override
  public synchronized CreateOutcome createVersion(WeightVersion version) {
    String scope = scope(version.getModelName(), version.getIdempotencyKey());
    if (reservations.containsKey(scope)) {
      return CreateOutcome.EXISTING;
    }
    if (versions.containsKey(version.getUid())) {
      return CreateOutcome.COLLISION;
    }
    versions.put(version.getUid(), new Entry(version));
    reservations.put(scope, version.getUid());
    return CreateOutcome.CREATED;
  }

  @Override
  public synchronized Optional<String> reservedUid(String modelName, String idempotencyKey) {
    return Optional.ofNullable(reservations.get(scope(modelName, idempotencyKey)));
  }

  private Worker liveWorker(String workerId, long now) {
    Worker w = workers.get(workerId);
    if (w != null && w.expiresAt() <= now) {
      workers.remove(workerId);
      return null;
    }
    return w;
  }

  @Override
  public synchronized long registerWorker(WorkerRegistration worker, long ttlMillis) {
    long now = clock.nowMillis();
    Worker live = liveWorker(worker.getWorkerId(), now);
    if (live != null
        && (live.role() != worker.getRole() || !live.modelName().equals(worker.getModelName()))) {
      throw RefitFailure.WORKER_CONFLICT.raise(
          "worker "
              + q(worker.getWorkerId())
              + " is live as "
              + live.role()
              + " of model "
              + q(live.modelName()));
    }
    long expiry = now + ttlMillis;
    workers.put(
        worker.getWorkerId(),
        new Worker(worker.getWorkerId(), worker.getRole(), worker.getModelName(), expiry));
    return expiry;
  }

  @Override
  public synchronized WeightVersionState publishShard(WeightVersionShard shard) {
    long now = clock.nowMillis();
    String subject =
        RefitText.shardSubject(shard.getVersionId(), shard.getSourceSlotId(), shard.getWorkerId());
    Entry e = versions.get(shard.getVersionId());
    if (e == null) {
      throw RefitFailure.VERSION_NOT_FOUND.raise(subject);
    }
    Worker w = liveWorker(shard.getWorkerId(), now);
    if (w == null) {
      throw RefitFailure.WORKER_NOT_LIVE.raise(subject);
    }
    if (!w.modelName().equals(e.version.getModelName())) {
      throw RefitFailure.MODEL_MISMATCH.raise(subject + " of model " + q(w.modelName()));
    }
    WeightVersionState state = e.version.getState();
    if (state != WeightVersionState.WEIGHT_VERSION_STATE_STAGING
        && state != WeightVersionState.WEIGHT_VERSION_STATE_READY) {
      throw RefitFailure.NOT_ACCEPTING_SHARDS.raise(subject + ": the version is " + state);
    }
    if (!e.expected.contains(shard.getSourceSlotId())) {
      throw RefitFailure.SLOT_NOT_EXPECTED.raise(subject);
    }
    String key = RefitBackend.publicationKey(shard.getWorkerId(), shard.getSourceSlotId());
    WeightVersionShard existing = e.shards.get(key);
    if (existing != null) {
      if (existing.toByteString().equals(shard.toByteString())) {
        return state;
      }
      throw RefitFailure.SHARD_CONFLICT.raise(subject);
    }
    e.shards.put(key, shard);
    e.coverage.add(shard.getSourceSlotId());
    if (e.coverage.size() == e.expected.size()) {
      e.version =
          e.version.toBuilder().setState(WeightVersionState.WEIGHT_VERSION_STATE_READY).build();
    }
    return e.version.getState();
  }

  @Override
  public synchronized Optional<List<WeightVersionShard>> shards(String versionId) {
    Entry e = versions.get(versionId);
    return e == null ? Optional.empty() : Optional.of(new ArrayList<>(e.shards.values()));
  }

  @Override
  public synchronized Optional<WeightVersionShard> shard(
      String versionId, String workerId, String sourceSlotId) {
    Entry e = versions.get(versionId);
    return e == null
        ? Optional.empty()
        : Optional.ofNullable(e.shards.get(RefitBackend.publicationKey(workerId, sourceSlotId)));
  }

  @Override
  public synchronized void deleteVersion(String uid) {
    Entry e = versions.get(uid);
    if (e == null) {
      throw RefitFailure.VERSION_NOT_FOUND.raise("version " + q(uid));
    }
    switch (e.version.getState()) {
      case WEIGHT_VERSION_STATE_RELEASING -> {}
      case WEIGHT_VERSION_STATE_READY ->
          e.version =
              e.version.toBuilder()
                  .setState(WeightVersionState.WEIGHT_VERSION_STATE_RELEASING)
                  .build();
      default ->
          throw RefitFailure.VERSION_NOT_READY.raise(
              "version " + q(uid) + " is " + e.version.getState());
    }
  }

  @Override
  public synchronized void deleteShard(WeightVersionShard expected) {
    long now = clock.nowMillis();
    String subject =
        RefitText.shardSubject(
            expected.getVersionId(), expected.getSourceSlotId(), expected.getWorkerId());
    Entry e = versions.get(expected.getVersionId());
    if (e == null) {
      throw RefitFailure.VERSION_NOT_FOUND.raise(subject);
    }
    if (e.version.getState() != WeightVersionState.WEIGHT_VERSION_STATE_RELEASING) {
      throw RefitFailure.NOT_RELEASING.raise(subject + ": the version is " + e.version.getState());
    }
    if (liveWorker(expected.getWorkerId(), now) == null) {
      throw RefitFailure.WORKER_NOT_LIVE.raise(subject);
    }
    String key = RefitBackend.publicationKey(expected.getWorkerId(), expected.getSourceSlotId());
    WeightVersionShard stored = e.shards.get(key);
    if (stored == null) {
      throw RefitFailure.SHARD_NOT_FOUND.raise(subject);
    }
    if (!stored.toByteString().equals(expected.toByteString())) {
      throw RefitFailure.SHARD_CHANGED.raise(subject);
    }
    e.leases.values().removeIf(l -> l.getExpiresAtUnixMs() <= now);
    if (!e.leases.isEmpty()) {
      throw RefitFailure.ACTIVE_LEASE.raise(
          subject + ", held by lease " + q(e.leases.keySet().iterator().next()));
    }
    e.shards.remove(key);
  }

  @Override
  public synchronized long registerLease(
      String leaseId, String versionId, String workerId, long ttlMillis) {
    long now = clock.nowMillis();
    String subject =
        "version " + q(versionId) + ", worker " + q(workerId) + ", lease " + q(leaseId);
    Entry e = versions.get(versionId);
    if (e == null) {
      throw RefitFailure.VERSION_NOT_FOUND.raise(subject);
    }
    Worker w = liveWorker(workerId, now);
    if (w == null) {
      throw RefitFailure.WORKER_NOT_LIVE.raise(subject);
    }
    if (w.role() != WorkerRole.WORKER_ROLE_GENERATOR) {
      throw RefitFailure.NOT_GENERATOR.raise(subject + " is a " + w.role());
    }
    if (!w.modelName().equals(e.version.getModelName())) {
      throw RefitFailure.MODEL_MISMATCH.raise(subject + " of model " + q(w.modelName()));
    }
    WeightVersionState state = e.version.getState();
    VersionLease held = e.leases.get(leaseId);
    if (held != null && held.getExpiresAtUnixMs() <= now) {
      e.leases.remove(leaseId);
      held = null;
    }
    if (held != null) {
      if (!held.getVersionId().equals(versionId) || !held.getWorkerId().equals(workerId)) {
        throw RefitFailure.LEASE_ID_CONFLICT.raise(
            subject + ", held by worker " + q(held.getWorkerId()));
      }
      if (state != WeightVersionState.WEIGHT_VERSION_STATE_READY
          && state != WeightVersionState.WEIGHT_VERSION_STATE_RELEASING) {
        throw RefitFailure.NOT_ACCEPTING_LEASES.raise(subject + ": the version is " + state);
      }
    } else if (state != WeightVersionState.WEIGHT_VERSION_STATE_READY) {
      throw RefitFailure.NOT_ACCEPTING_LEASES.raise(subject + ": the version is " + state);
    }
    long expiry = now + ttlMillis;
    e.leases.put(
        leaseId,
        VersionLease.newBuilder()
            .setLeaseId(leaseId)
            .setVersionId(versionId)
            .setWorkerId(workerId)
            .setExpiresAtUnixMs(expiry)
            .build());
    return expiry;
  }

  @Override
  public synchronized Optional<VersionLease> lease(String versionId, String leaseId) {
    Entry e = versions.get(versionId);
    if (e == null) {
      return Optional.empty();
    }
    VersionLease l = e.leases.get(leaseId);
    return l == null || l.getExpiresAtUnixMs() <= clock.nowMillis()
        ? Optional.empty()
        : Optional.of(l);
  }

  @Override
  public synchronized boolean deleteLease(String versionId, String leaseId, String workerId) {
    Entry e = versions.get(versionId);
    if (e == null) {
      return false;
    }
    VersionLease l = e.leases.get(leaseId);
    if (l == null || l.getExpiresAtUnixMs() <= clock.nowMillis()) {
      e.leases.remove(leaseId);
      return false;
    }
    if (!l.getWorkerId().equals(workerId) || !l.getVersionId().equals(versionId)) {
      throw RefitFailure.LEASE_OWNED_ELSEWHERE.raise(
          "version "
              + q(versionId)
              + ", lease "
              + q(leaseId)
              + " is held by worker "
              + q(l.getWorkerId())
              + ", not "
              + q(workerId));
    }
    e.leases.remove(leaseId);
    return true;
  }

  @Override
  public void close() {
    // Nothing to release: the records go with the object.
  }
}
