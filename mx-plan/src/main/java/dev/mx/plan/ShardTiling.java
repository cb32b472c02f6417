package dev.mx.plan;

import dev.mx.api.Box;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.Arrays;
import java.util.List;

/**
 * Checks that a source's shards tile its global shape exactly: every element held by some shard,
 * none held by two shards of different geometry. Shards with identical boxes are replicas of one
 * another (data-parallel copies, ModelExpress; ARCHITECTURE §7.5) and count once; empty shards are
 * ignored. Receivers call it during discovery, the planner before planning (unless the source is
 * declared {@link SourceInfo#partial() partial}).
 */
public final class ShardTiling {
  /**
   * Above this many cells of the shards' boundary grid a hole is reported by volume only, without
   * its box.
   */
  private static final long MAX_GRID_CELLS = 1L << 22;

  private ShardTiling() {}

  /**
   * Throws when the shards of {@code name} leave a hole or overlap. A shard outside the global
   * shape, or of another rank, is an overlap-free error too (its box is named).
   *
   * @throws ShardTilingException naming the source, the first hole or overlap box, and the shards
   *     involved
   */
  public static void check(String name, SourceInfo info) {
    ShardTilingException e = find(name, info);
    if (e != null) {
      throw e;
    }
  }

  /**
   * As {@link #check} but returns the error (or null when the shards tile the source) instead of
   * throwing.
   */
  public static ShardTilingException find(String name, SourceInfo info) {
    String path = "sources." + name + ".shards";
    long[] g = info.globalShape().dims();
    int n = g.length;
    List<Shard> shards = info.shards();
    int k = shards.size();
    long[][] lo = new long[k][];
    long[][] hi = new long[k][];
    boolean[] skip = new boolean[k];
    for (int i = 0; i < k; i++) {
      Shard s = shards.get(i);
      lo[i] = s.shardOffset();
      long[] dims = s.shape().dims();
      if (lo[i].length != n) {
        return new ShardTilingException(
            path + "[" + i + "]",
            name,
            ShardTilingException.Kind.OVERLAP,
            null,
            "source '"
                + name
                + "' shard #"
                + i
                + " (session '"
                + s.session()
                + "') has rank "
                + lo[i].length
                + " but the global shape "
                + info.globalShape()
                + " has rank "
                + n);
      }
      hi[i] = new long[n];
      for (int d = 0; d < n; d++) {
        hi[i][d] = lo[i][d] + dims[d];
        if (hi[i][d] < 0 || hi[i][d] > g[d]) {
          return new ShardTilingException(
              path + "[" + i + "]",
              name,
              ShardTilingException.Kind.OVERLAP,
              null,
              "source '"
                  + name
                  + "' shard #"
                  + i
                  + " (session '"
                  + s.session()
                  + "') (offset "
                  + Arrays.toString(lo[i])
                  + ", shape "
                  + s.shape()
                  + ") extends to "
                  + hi[i][d]
                  + " in dim "
                  + d
                  + ", outside the global shape "
                  + info.globalShape());
        }
        if (dims[d] == 0) {
          skip[i] = true;
        }
      }
      for (int j = 0; j < i && !skip[i]; j++) {
        if (!skip[j] && Arrays.equals(lo[i], lo[j]) && Arrays.equals(hi[i], hi[j])) {
          skip[i] = true; // a replica of shard j
        }
      }
    }
    // Pairwise overlap among distinct boxes: sweep along dim 0.
    long volume = 0;
    Integer[] order = new Integer[k];
    for (int i = 0; i < k; i++) {
      order[i] = i;
    }
    if (n > 0) {
      Arrays.sort(order, (a, b) -> Long.compare(lo[a][0], lo[b][0]));
    }
    for (int x = 0; x < k; x++) {
      int i = order[x];
      if (skip[i]) {
        continue;
      }
      long v = 1;
      for (int d = 0; d < n; d++) {
        v = Math.multiplyExact(v, hi[i][d] - lo[i][d]);
      }
      volume = Math.addExact(volume, v);
      for (int y = x + 1; y < k && (n == 0 || lo[order[y]][0] < hi[i][0]); y++) {
        int j = order[y];
        if (skip[j]) {
          continue;
        }
        long[] olo = new long[n];
        long[] ohi = new long[n];
        boolean meet = true;
        for (int d = 0; d < n && meet; d++) {
          olo[d] = Math.max(lo[i][d], lo[j][d]);
          ohi[d] = Math.min(hi[i][d], hi[j][d]);
          meet = olo[d] < ohi[d];
        }
        if (meet) {
          int a = Math.min(i, j);
          int b = Math.max(i, j);
          Box box = new Box(olo, ohi);
          return new ShardTilingException(
              path + "[" + b + "]",
              name,
              ShardTilingException.Kind.OVERLAP,
              box,
              "shards #"
                  + a
                  + " (session '"
                  + shards.get(a).session()
                  + "', box "
                  + box(lo[a], hi[a])
                  + ") and #"
                  + b
                  + " (session '"
                  + shards.get(b).session()
                  + "', box "
                  + box(lo[b], hi[b])
                  + ") of source '"
                  + name
                  + "' overlap in "
                  + box
                  + " with different geometry");
        }
      }
    }
    long need = info.globalShape().numel();
    if (volume == need) {
      return null;
    }
    Box hole = firstHole(g, lo, hi, skip);
    return new ShardTilingException(
        path,
        name,
        ShardTilingException.Kind.HOLE,
        hole,
        "the shards of source '"
            + name
            + "' hold "
            + volume
            + " of its "
            + need
            + " elements: "
            + (hole != null ? "no shard holds " + hole : "they leave holes")
            + " (declare the source \"partial\": true if that is intended)");
  }

  /**
   * The first grid cell (row-major over the shards' boundary grid) no shard covers, or null if too
   * many cells.
   */
  private static Box firstHole(long[] g, long[][] lo, long[][] hi, boolean[] skip) {
    int n = g.length;
    long[][] cuts = new long[n][];
    long cells = 1;
    for (int d = 0; d < n; d++) {
      java.util.TreeSet<Long> c = new java.util.TreeSet<>();
      c.add(0L);
      c.add(g[d]);
      for (int i = 0; i < lo.length; i++) {
        if (!skip[i]) {
          c.add(lo[i][d]);
          c.add(hi[i][d]);
        }
      }
      cuts[d] = c.stream().mapToLong(Long::longValue).toArray();
      cells = cuts[d].length - 1 <= 0 ? 0 : cells * (cuts[d].length - 1);
      if (cells > MAX_GRID_CELLS) {
        return null;
      }
    }
    int[] idx = new int[n];
    for (long c = 0; c < cells; c++) {
      long[] clo = new long[n];
      long[] chi = new long[n];
      for (int d = 0; d < n; d++) {
        clo[d] = cuts[d][idx[d]];
        chi[d] = cuts[d][idx[d] + 1];
      }
      boolean covered = false;
      for (int i = 0; i < lo.length && !covered; i++) {
        if (skip[i]) {
          continue;
        }
        covered = true;
        for (int d = 0; d < n && covered; d++) {
          covered = lo[i][d] <= clo[d] && chi[d] <= hi[i][d];
        }
      }
      if (!covered) {
        return new Box(clo, chi);
      }
      for (int d = n - 1; d >= 0; d--) {
        if (++idx[d] < cuts[d].length - 1) {
          break;
        }
        idx[d] = 0;
      }
    }
    return null;
  }

  private static String box(long[] lo, long[] hi) {
    return new Box(lo, hi).toString();
  }
}
