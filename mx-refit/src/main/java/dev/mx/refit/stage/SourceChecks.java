package dev.mx.refit.stage;

import dev.mx.api.Box;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The discovery-check stage: before planning, every discovered source's shards must tile its global shape
 * exactly — inside it, no two overlapping, no element left out. A missing shard or a missing tensor entry in
 * one publisher's table leaves a hole here, named with the source and the first uncovered box, instead of
 * installing zeros.
 */
public final class SourceChecks {
  /** Beyond this many grid cells the hole search gives up naming a box (the count is still exact). */
  private static final long MAX_GRID = 1 << 20;

  private SourceChecks() {}

  /**
   * @throws IncompleteRefitException naming the source and the overlapping shards or the first hole
   */
  public static void requireTiled(Map<String, SourceInfo> sources) {
    for (Map.Entry<String, SourceInfo> e : sources.entrySet()) {
      requireTiled(e.getKey(), e.getValue());
    }
  }

  static void requireTiled(String name, SourceInfo info) {
    Box whole = Box.whole(info.globalShape());
    List<Shard> shards = new ArrayList<>(info.shards());
    long covered = 0;
    for (Shard s : shards) {
      if (!whole.contains(s.box())) {
        throw new IncompleteRefitException("source '" + name + "': shard " + s.box() + " of session '" + s.session()
            + "' reaches outside the global shape " + info.globalShape(), List.of(name));
      }
      covered += s.shape().numel();
    }
    if (info.globalShape().rank() > 0) {
      shards.sort(Comparator.comparingLong(s -> s.shardOffset(0)));
    }
    for (int i = 0; i < shards.size(); i++) {
      Shard a = shards.get(i);
      if (a.shape().numel() == 0) {
        continue;
      }
      for (int j = i + 1; j < shards.size(); j++) {
        Shard b = shards.get(j);
        if (a.box().rank() > 0 && b.shardOffset(0) >= a.box().hi(0)) {
          break; // sorted by dim-0 start: no later shard can overlap a
        }
        Box x = a.box().intersect(b.box());
        if (x != null && !x.isEmpty()) {
          throw new IncompleteRefitException("source '" + name + "': shards of sessions '" + a.session() + "' and '"
              + b.session() + "' overlap in box " + x + " (the publishers disagree about who holds it)", List.of(name));
        }
      }
    }
    long numel = info.globalShape().numel();
    if (covered != numel) {
      throw new IncompleteRefitException("source '" + name + "': the published shards cover " + covered + " of "
          + numel + " elements of " + info.globalShape() + "; first missing box " + firstHole(whole, shards)
          + " (a publisher's table lacks a shard or a tensor entry)", List.of(name));
    }
  }

  /** The first cell of the grid spanned by the shards' edges that no shard holds, or "unknown". */
  private static String firstHole(Box whole, List<Shard> shards) {
    int rank = whole.rank();
    long[][] cuts = new long[rank][];
    long cells = 1;
    for (int d = 0; d < rank; d++) {
      TreeSet<Long> c = new TreeSet<>();
      c.add(0L);
      c.add(whole.hi(d));
      for (Shard s : shards) {
        c.add(s.box().lo(d));
        c.add(s.box().hi(d));
      }
      cuts[d] = c.stream().mapToLong(Long::longValue).toArray();
      cells *= cuts[d].length - 1;
      if (cells > MAX_GRID) {
        return "unknown (too many shards to search)";
      }
    }
    int[] idx = new int[rank];
    while (true) {
      long[] lo = new long[rank];
      long[] hi = new long[rank];
      boolean empty = false;
      for (int d = 0; d < rank; d++) {
        lo[d] = cuts[d][idx[d]];
        hi[d] = cuts[d][idx[d] + 1];
        empty |= hi[d] <= lo[d];
      }
      if (!empty) {
        Box cell = new Box(lo, hi);
        boolean held = false;
        for (Shard s : shards) {
          if (s.box().contains(cell)) {
            held = true;
            break;
          }
        }
        if (!held) {
          return cell.toString();
        }
      }
      int d = rank - 1;
      while (d >= 0 && ++idx[d] == cuts[d].length - 1) {
        idx[d] = 0;
        d--;
      }
      if (d < 0) {
        return "unknown";
      }
    }
  }

  /**
   * Same sources with the same shapes, dtypes and shards (session, address, box), digests aside. Shard
   * order does not matter: stores list publishers newest heartbeat first, so it changes between reads.
   */
  public static boolean sameGeometry(Map<String, SourceInfo> a, Map<String, SourceInfo> b) {
    if (!a.keySet().equals(b.keySet())) {
      return false;
    }
    for (Map.Entry<String, SourceInfo> e : a.entrySet()) {
      SourceInfo x = e.getValue();
      SourceInfo y = b.get(e.getKey());
      if (!x.globalShape().equals(y.globalShape()) || x.dtype() != y.dtype() || x.shards().size() != y.shards().size()) {
        return false;
      }
      java.util.Set<Shard> xs = new java.util.HashSet<>();
      x.shards().forEach(s -> xs.add(s.withDigest(null)));
      for (Shard s : y.shards()) {
        if (!xs.contains(s.withDigest(null))) {
          return false;
        }
      }
    }
    return true;
  }

}
