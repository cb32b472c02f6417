package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionException.Reason;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The version and lease rules for stores that implement them in Java: every operation runs inside
 * {@link #locked} (one model at a time, across threads and, for {@code file:}, processes), loads
 * the {@link VersionDoc}, applies the rule and saves it back. The Redis store implements the same
 * rules in Lua.
 */
@Stable
public abstract class AbstractWeightVersionStore implements WeightVersionStore {
  private final String uri;
  private final LongSupplier clockMillis;
  private final Runnable ensureOpen;

  /**
   * @param uri the owning store's URI, for messages
   * @param clockMillis the clock leases expire by (epoch milliseconds)
   * @param ensureOpen fails when the owning store is closed
   */
  protected AbstractWeightVersionStore(String uri, LongSupplier clockMillis, Runnable ensureOpen) {
    this.uri = uri;
    this.clockMillis = clockMillis;
    this.ensureOpen = ensureOpen;
  }

  /** Runs {@code body} while holding the exclusive lock of {@code model}. */
  protected abstract <T> T locked(String model, Supplier<T> body);

  /** The document of a version, or null when there is none (called under the lock). */
  protected abstract VersionDoc load(String model, String versionId);

  /** Stores a document (called under the lock). */
  protected abstract void save(VersionDoc doc);

  /** Removes a version with its tables (called under the lock). */
  protected abstract void delete(String model, String versionId);

  /** The ids of every version of {@code model} (called under the lock). */
  protected abstract List<String> ids(String model);

  /** Stores a slot's table before its document says the slot landed (called under the lock). */
  protected abstract void writeTable(String model, String versionId, String slot, byte[] table);

  /** A slot's table, or null when missing (called under the lock). */
  protected abstract byte[] readTable(String model, String versionId, String slot);

  /** Removes a slot's table (called under the lock). */
  protected abstract void deleteTable(String model, String versionId, String slot);

  /** Now, epoch milliseconds: the clock leases expire by. */
  protected final long nowMillis() {
    return clockMillis.getAsLong();
  }

  /** Fails when the owning store is closed. */
  protected final void ensureOpen() {
    ensureOpen.run();
  }

  @Override
  public WeightVersion createVersion(
      String model, String versionId, long step, List<String> expectedSlots) {
    ensureOpen();
    VersionRules.requireName(uri, "model", model);
    VersionRules.requireName(uri, "version id", versionId);
    List<String> expected = VersionRules.expectedSlots(uri, versionId, expectedSlots);
    return locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          if (doc != null) {
            if (doc.step != step || !doc.expectedSlots.equals(expected)) {
              throw new WeightVersionException(
                  Reason.CONFLICT,
                  uri
                      + ": version '"
                      + versionId
                      + "' of '"
                      + model
                      + "' exists with step "
                      + doc.step
                      + " and slots "
                      + doc.expectedSlots
                      + ", not step "
                      + step
                      + " and slots "
                      + expected);
            }
            return doc.toVersion();
          }
          VersionDoc created =
              new VersionDoc(
                  versionId, model, step, expected, WeightVersionState.STAGING, nowMillis());
          save(created);
          return created.toVersion();
        });
  }

  @Override
  public WeightVersion publishSlot(String model, VersionSlot slot) {
    ensureOpen();
    VersionRules.requireName(uri, "model", model);
    VersionRules.checkDigest(uri, model, slot);
    return locked(
        model,
        () -> {
          VersionDoc doc = existing(model, slot.versionId());
          if (doc.state == WeightVersionState.RELEASING) {
            throw VersionRules.wrongState(
                uri, doc.toVersion(), "slot '" + slot.slot() + "' cannot land");
          }
          if (!doc.expectedSlots.contains(slot.slot())) {
            throw VersionRules.unknownSlot(uri, doc.toVersion(), slot.slot());
          }
          VersionDoc.Slot held = doc.slots.get(slot.slot());
          if (held != null) {
            if (!held.workerId().equals(slot.workerId())
                || !held.tableDigest().equals(slot.tableDigest())) {
              throw VersionRules.slotConflict(
                  uri, doc.toVersion(), slot, held.workerId(), held.tableDigest());
            }
          } else {
            writeTable(model, slot.versionId(), slot.slot(), slot.table());
          }
          doc.slots.put(
              slot.slot(),
              new VersionDoc.Slot(slot.workerId(), slot.tableDigest(), SlotStatus.READY));
          if (doc.state == WeightVersionState.STAGING
              && doc.slots.keySet().containsAll(doc.expectedSlots)) {
            doc.state = WeightVersionState.READY;
          }
          save(doc);
          return doc.toVersion();
        });
  }

  @Override
  public void markSlotStale(String model, String versionId, String slot, String workerId) {
    ensureOpen();
    locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          VersionDoc.Slot held = doc == null ? null : doc.slots.get(slot);
          if (held == null) {
            return null;
          }
          if (!held.workerId().equals(workerId)) {
            throw VersionRules.notOwner(uri, doc.toVersion(), slot, workerId, held.workerId());
          }
          doc.slots.put(
              slot, new VersionDoc.Slot(held.workerId(), held.tableDigest(), SlotStatus.STALE));
          save(doc);
          return null;
        });
  }

  @Override
  public Optional<WeightVersion> version(String model, String versionId) {
    ensureOpen();
    return locked(
        model, () -> Optional.ofNullable(load(model, versionId)).map(VersionDoc::toVersion));
  }

  @Override
  public List<WeightVersion> versions(String model) {
    ensureOpen();
    return locked(
        model,
        () -> {
          List<WeightVersion> out = new ArrayList<>();
          for (String id : ids(model)) {
            VersionDoc doc = load(model, id);
            if (doc != null) {
              out.add(doc.toVersion());
            }
          }
          out.sort(BY_STEP);
          return out;
        });
  }

  @Override
  public List<VersionSlot> slots(String model, String versionId) {
    ensureOpen();
    return locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          if (doc == null) {
            return List.of();
          }
          List<VersionSlot> out = new ArrayList<>();
          for (Map.Entry<String, VersionDoc.Slot> e : doc.slots.entrySet()) {
            byte[] table = readTable(model, versionId, e.getKey());
            if (table != null) {
              out.add(
                  new VersionSlot(
                      versionId,
                      e.getKey(),
                      e.getValue().workerId(),
                      table,
                      e.getValue().tableDigest(),
                      e.getValue().status()));
            }
          }
          return out;
        });
  }

  @Override
  public WeightVersion release(String model, String versionId) {
    ensureOpen();
    return locked(
        model,
        () -> {
          VersionDoc doc = existing(model, versionId);
          if (doc.state != WeightVersionState.RELEASING) {
            doc.state = WeightVersionState.RELEASING;
            save(doc);
          }
          return doc.toVersion();
        });
  }

  @Override
  public Reclaim reclaim(String model, String versionId, String slot, String workerId) {
    ensureOpen();
    return locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          if (doc == null) {
            return new Reclaim(true, null, List.of());
          }
          doc.pruneLeases(nowMillis());
          if (doc.state != WeightVersionState.RELEASING || !doc.leases.isEmpty()) {
            List<VersionLease> live = doc.liveLeases();
            save(doc);
            return new Reclaim(false, doc.state, live);
          }
          VersionDoc.Slot held = doc.slots.get(slot);
          if (held != null && !held.workerId().equals(workerId)) {
            throw VersionRules.notOwner(uri, doc.toVersion(), slot, workerId, held.workerId());
          }
          if (held != null) {
            doc.slots.remove(slot);
            deleteTable(model, versionId, slot);
          }
          if (doc.slots.values().stream().noneMatch(s -> s.status() == SlotStatus.READY)) {
            delete(model, versionId);
          } else {
            save(doc);
          }
          return new Reclaim(true, WeightVersionState.RELEASING, List.of());
        });
  }

  @Override
  public VersionLease acquireLease(String model, String versionId, String holder, Duration ttl) {
    ensureOpen();
    VersionRules.requireName(uri, "lease holder", holder);
    long ttlMillis = VersionRules.ttlMillis(uri, ttl);
    return locked(
        model,
        () -> {
          VersionDoc doc = existing(model, versionId);
          long now = nowMillis();
          doc.pruneLeases(now);
          boolean renewal = doc.leases.containsKey(holder);
          if (!renewal && doc.state != WeightVersionState.READY) {
            throw VersionRules.wrongState(
                uri, doc.toVersion(), "no new lease for '" + holder + "'");
          }
          doc.leases.put(holder, now + ttlMillis);
          save(doc);
          return new VersionLease(versionId, holder, now + ttlMillis);
        });
  }

  @Override
  public VersionLease renewLease(String model, String versionId, String holder, Duration ttl) {
    ensureOpen();
    long ttlMillis = VersionRules.ttlMillis(uri, ttl);
    return locked(
        model,
        () -> {
          VersionDoc doc = existing(model, versionId);
          long now = nowMillis();
          doc.pruneLeases(now);
          if (!doc.leases.containsKey(holder)) {
            save(doc);
            throw VersionRules.leaseLost(uri, doc.toVersion(), holder);
          }
          doc.leases.put(holder, now + ttlMillis);
          save(doc);
          return new VersionLease(versionId, holder, now + ttlMillis);
        });
  }

  @Override
  public boolean dropLease(String model, String versionId, String holder) {
    ensureOpen();
    return locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          if (doc == null || doc.leases.remove(holder) == null) {
            return false;
          }
          save(doc);
          return true;
        });
  }

  @Override
  public List<VersionLease> leases(String model, String versionId) {
    ensureOpen();
    return locked(
        model,
        () -> {
          VersionDoc doc = load(model, versionId);
          if (doc == null) {
            return List.of();
          }
          doc.pruneLeases(nowMillis());
          return doc.liveLeases();
        });
  }

  private VersionDoc existing(String model, String versionId) {
    VersionDoc doc = load(model, versionId);
    if (doc == null) {
      throw VersionRules.notFound(uri, model, versionId);
    }
    return doc;
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + uri + "]";
  }
}
