package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Everything a store without server-side scripts keeps about one version except the tables
 * themselves: the version's fields, its landed slots (worker, table digest, status) and its leases
 * (holder → expiry). The {@code memory:} and {@code file:} stores load one, change it under their
 * lock and store it back, so both follow the same rules ({@link AbstractWeightVersionStore}).
 */
@Internal
public final class VersionDoc {
  /** One landed slot without its table. */
  public record Slot(String workerId, String tableDigest, SlotStatus status) {}

  public final String id;
  public final String model;
  public final long step;
  public final List<String> expectedSlots;
  public final long createdAtMillis;
  public WeightVersionState state;
  public final TreeMap<String, Slot> slots = new TreeMap<>();
  public final TreeMap<String, Long> leases = new TreeMap<>();

  public VersionDoc(
      String id,
      String model,
      long step,
      List<String> expectedSlots,
      WeightVersionState state,
      long createdAtMillis) {
    this.id = id;
    this.model = model;
    this.step = step;
    this.expectedSlots = expectedSlots.stream().sorted().toList();
    this.state = state;
    this.createdAtMillis = createdAtMillis;
  }

  /** The public view of this document. */
  public WeightVersion toVersion() {
    Map<String, SlotStatus> status = new LinkedHashMap<>();
    slots.forEach((s, e) -> status.put(s, e.status()));
    return new WeightVersion(id, model, step, expectedSlots, state, status, createdAtMillis);
  }

  /** Drops leases that expired at {@code nowMillis}. */
  public void pruneLeases(long nowMillis) {
    leases.values().removeIf(expiry -> expiry <= nowMillis);
  }

  /** The live leases, by holder (prune first). */
  public List<VersionLease> liveLeases() {
    List<VersionLease> out = new ArrayList<>();
    leases.forEach((h, e) -> out.add(new VersionLease(id, h, e)));
    return out;
  }
}
