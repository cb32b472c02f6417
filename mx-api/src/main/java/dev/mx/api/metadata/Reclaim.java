package dev.mx.api.metadata;

import java.util.List;

/**
 * The answer to a publisher asking for its memory back ({@link WeightVersionStore#reclaim}).
 *
 * @param granted true when the publisher may overwrite the memory behind its slot: the version is
 *     RELEASING with no live lease (the slot was removed), or the version is gone
 * @param state the version's state when refused (or RELEASING when granted); null when the version
 *     is gone
 * @param liveLeases the leases that refused it, empty when granted
 */
public record Reclaim(boolean granted, WeightVersionState state, List<VersionLease> liveLeases) {

  public Reclaim {
    liveLeases = List.copyOf(liveLeases);
  }

  /** The holders of the live leases, for messages. */
  public List<String> holders() {
    return liveLeases.stream().map(VersionLease::holder).toList();
  }
}
