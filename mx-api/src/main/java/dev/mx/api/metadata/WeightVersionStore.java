package dev.mx.api.metadata;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Weight versions and leases (ModelExpress; ARCHITECTURE §7.5, §4.4), kept beside the publisher
 * directory of a {@link MetadataStore} ({@link MetadataStore#versions()}). Every mutating call is
 * one atomic transition of one version, on every backend; the rules, the keys and who writes what
 * are in {@code docs/VERSIONS.md}.
 *
 * <p>Lifecycle: {@link #createVersion} (STAGING) → each publisher {@link #publishSlot}s its table;
 * the call that lands the last expected slot turns the version READY in the same step → receivers
 * {@link #acquireLease lease} it, read, install, {@link #dropLease drop} the lease → a publisher
 * that needs the memory back {@link #release}s it (RELEASING) and {@link #reclaim}s its slot once
 * no lease is live → when no READY slot remains the version is gone. Leases expire on their own, so
 * a dead receiver frees a version after its TTL.
 *
 * <p>Time (lease expiry) is the store's clock: the Redis server's {@code TIME}, the host's clock
 * for {@code file:} and {@code memory:}. Calls fail with {@link WeightVersionException} naming the
 * version, slot or holder at fault.
 */
public interface WeightVersionStore {

  /** Versions in the order followers take them: by step, then by id. */
  Comparator<WeightVersion> BY_STEP =
      Comparator.comparingLong(WeightVersion::step).thenComparing(WeightVersion::id);

  /**
   * Creates a STAGING version, or returns the existing one when one with the same id, step and
   * expected slots exists (so every publisher of a step may call it).
   *
   * @throws WeightVersionException CONFLICT when the id exists with another step or other slots
   */
  WeightVersion createVersion(
      String model, String versionId, long step, List<String> expectedSlots);

  /**
   * Lands one publisher's slot: the table, its SHA-256 and the worker. Turns the version READY
   * atomically when this was the last missing slot. Re-publishing an identical slot is a no-op (and
   * revives it from STALE).
   *
   * @return the version as of this transition (READY exactly for the call that landed the last
   *     slot)
   * @throws WeightVersionException NOT_FOUND, WRONG_STATE (RELEASING), UNKNOWN_SLOT,
   *     DIGEST_MISMATCH (the table does not hash to {@code slot.tableDigest()}), or CONFLICT
   *     (another worker or another table already holds the slot)
   */
  WeightVersion publishSlot(String model, VersionSlot slot);

  /**
   * Marks a worker's slot STALE (its publisher is going away). Does nothing when the version or the
   * slot is gone.
   *
   * @throws WeightVersionException CONFLICT when the slot belongs to another worker
   */
  void markSlotStale(String model, String versionId, String slot, String workerId);

  /** One version as of now. */
  Optional<WeightVersion> version(String model, String versionId);

  /** Every version of {@code model}, in {@link #BY_STEP} order. */
  List<WeightVersion> versions(String model);

  /**
   * The slots of a version with their tables, sorted by slot. Tables are returned as stored: a
   * receiver checks each with {@link VersionSlot#verified}.
   */
  List<VersionSlot> slots(String model, String versionId);

  /**
   * The slots of a version among {@code only}, with their tables, sorted by slot. A store whose
   * tables are served by their publishers ({@link #fetchesTablesSelectively}) fetches only these;
   * the default lists every slot and keeps those.
   */
  default List<VersionSlot> slots(String model, String versionId, java.util.Set<String> only) {
    return slots(model, versionId).stream().filter(s -> only.contains(s.slot())).toList();
  }

  /**
   * Whether {@link #slots(String, String, java.util.Set)} fetches fewer tables than {@link
   * #slots(String, String)}: a follower then fetches, for a version like the one it installed, only
   * the tables its plan reads. False by default.
   */
  default boolean fetchesTablesSelectively() {
    return false;
  }

  /**
   * A hint from a reader of {@code model}: the slots whose tables it will ask for next (null: every
   * slot). A store that fetches tables while a version is still STAGING fetches only these. The
   * default ignores it.
   */
  default void preferSlots(String model, java.util.Set<String> slots) {}

  /**
   * STAGING or READY → RELEASING (idempotent when already RELEASING): no new lease is granted, and
   * publishers may reclaim once live leases are gone.
   *
   * @throws WeightVersionException NOT_FOUND
   */
  WeightVersion release(String model, String versionId);

  /**
   * Asks for the memory behind a worker's slot back. Granted — and the slot removed, and the
   * version deleted when no READY slot remains — only when the version is RELEASING and holds no
   * live lease (expired leases are pruned first), or when the version is gone; refused otherwise,
   * with the state and live leases.
   *
   * @throws WeightVersionException CONFLICT when the slot belongs to another worker
   */
  Reclaim reclaim(String model, String versionId, String slot, String workerId);

  /**
   * Takes a lease for {@code holder}, or renews the one it holds. A new lease is granted only on a
   * READY version; a live lease may be renewed while READY or RELEASING.
   *
   * @throws WeightVersionException NOT_FOUND, or WRONG_STATE for a new lease on a version that is
   *     not READY
   */
  VersionLease acquireLease(String model, String versionId, String holder, Duration ttl);

  /**
   * Renews a live lease.
   *
   * @throws WeightVersionException LEASE_LOST when the lease expired or was never taken, NOT_FOUND
   *     when the version is gone
   */
  VersionLease renewLease(String model, String versionId, String holder, Duration ttl);

  /** Drops a holder's lease; false when it held none. */
  boolean dropLease(String model, String versionId, String holder);

  /** The live leases of a version, by holder. */
  List<VersionLease> leases(String model, String versionId);

  /** The readable version (READY, no stale slot) with the highest step, if any. */
  default Optional<WeightVersion> latestReadable(String model) {
    return versions(model).stream().filter(WeightVersion::isReadable).max(BY_STEP);
  }
}
