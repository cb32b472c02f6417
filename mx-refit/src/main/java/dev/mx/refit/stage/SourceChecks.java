package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.plan.ShardTiling;
import dev.mx.plan.ShardTilingException;
import java.util.List;
import java.util.Map;

/**
 * The discovery-check stage: before planning, every discovered source's shards must tile its global
 * shape exactly — inside it, no two overlapping, no element left out — unless its publishers
 * declared it partial. A missing shard or a missing tensor entry in one publisher's table leaves a
 * hole here, named with the source and the first uncovered box, instead of installing zeros.
 */
@Internal
public final class SourceChecks {
  private SourceChecks() {}

  /**
   * Every non-partial source must tile its shape ({@link ShardTiling}, mx-plan's check shared with
   * the planner).
   *
   * @throws IncompleteRefitException naming the source and the first hole or overlap box
   */
  public static void requireTiled(Map<String, SourceInfo> sources) {
    for (Map.Entry<String, SourceInfo> e : sources.entrySet()) {
      if (e.getValue().partial()) {
        continue; // the publishers declared that their shards deliberately leave parts out
      }
      ShardTilingException bad = ShardTiling.find(e.getKey(), e.getValue());
      if (bad != null) {
        IncompleteRefitException x =
            new IncompleteRefitException(
                "discovered sources are incomplete: "
                    + bad.getMessage()
                    + "; a publisher's table lacks a shard or a tensor entry, or two publishers disagree"
                    + " — refusing to plan",
                List.of(e.getKey()));
        x.initCause(bad);
        throw x;
      }
    }
  }

  /**
   * Same sources with the same shapes, dtypes and shards (session, address, box), digests aside.
   * Shard order does not matter: stores list publishers newest heartbeat first, so it changes
   * between reads.
   */
  public static boolean sameGeometry(Map<String, SourceInfo> a, Map<String, SourceInfo> b) {
    if (!a.keySet().equals(b.keySet())) {
      return false;
    }
    for (Map.Entry<String, SourceInfo> e : a.entrySet()) {
      SourceInfo x = e.getValue();
      SourceInfo y = b.get(e.getKey());
      if (!x.globalShape().equals(y.globalShape())
          || x.dtype() != y.dtype()
          || x.shards().size() != y.shards().size()) {
        return false;
      }
      java.util.Set<Shard> xs = new java.util.HashSet<>();
      x.shards().forEach(s -> xs.add(digestsAside(s)));
      for (Shard s : y.shards()) {
        if (!xs.contains(digestsAside(s))) {
          return false;
        }
      }
    }
    return true;
  }

  /**
   * The shard without its digests and last-changed step, keeping the tiling (a new tile size
   * changes what gets staged).
   */
  private static Shard digestsAside(Shard s) {
    // The last-changed step moves with the content, like the digests: not geometry.
    return s.withDigests(
            null, s.tiles() == null ? null : s.tiles().withDigests(java.util.List.of()))
        .withChangedStep(null);
  }
}
