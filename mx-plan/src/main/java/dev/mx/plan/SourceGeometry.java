package dev.mx.plan;

import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.Arrays;
import java.util.List;

/**
 * A source's shards, validated once and unpacked into arrays for the planning loops: box corners
 * and row-major strides of each shard's local buffer.
 */
final class SourceGeometry {
  final String name;
  final SourceInfo info;
  final long[] global;
  final int rank;
  final Shard[] shards;
  final long[][] lo;
  final long[][] hi;
  final long[][] strides;

  private SourceGeometry(String name, SourceInfo info) {
    this.name = name;
    this.info = info;
    this.global = info.globalShape().dims();
    this.rank = global.length;
    List<Shard> list = info.shards();
    int k = list.size();
    this.shards = list.toArray(new Shard[0]);
    this.lo = new long[k][];
    this.hi = new long[k][];
    this.strides = new long[k][];
    for (int i = 0; i < k; i++) {
      Shard s = shards[i];
      lo[i] = s.shardOffset();
      hi[i] = s.shape().dims();
      strides[i] = s.shape().rowMajorStrides();
      for (int d = 0; d < hi[i].length; d++) {
        hi[i][d] += lo[i][d];
      }
    }
  }

  /**
   * Validates and unpacks {@code info}.
   *
   * @throws IllegalArgumentException naming the source and shard index: rank mismatch, a shard
   *     outside the global shape, an element size that differs from the source's, or two
   *     overlapping shards of different geometry
   */
  static SourceGeometry of(String name, SourceInfo info) {
    SourceGeometry g = new SourceGeometry(name, info);
    g.validate();
    return g;
  }

  private void validate() {
    for (int i = 0; i < shards.length; i++) {
      Shard s = shards[i];
      if (lo[i].length != rank) {
        throw new IllegalArgumentException(
            where(i)
                + " has rank "
                + lo[i].length
                + " (offset "
                + Arrays.toString(lo[i])
                + ", shape "
                + s.shape()
                + ") but the global shape "
                + info.globalShape()
                + " has rank "
                + rank);
      }
      for (int d = 0; d < rank; d++) {
        if (hi[i][d] > global[d]) {
          throw new IllegalArgumentException(
              where(i)
                  + " (offset "
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
      }
      if (s.elsize() != info.elsize()) {
        throw new IllegalArgumentException(
            where(i)
                + " has element size "
                + s.elsize()
                + " but the source's "
                + info.dtype()
                + " elements have "
                + info.elsize());
      }
    }
    checkOverlaps();
  }

  /** Sweeps shards sorted by dim-0 start; only pairs whose dim-0 ranges meet are compared. */
  private void checkOverlaps() {
    if (shards.length < 2 || rank == 0) {
      return;
    }
    Integer[] order = new Integer[shards.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Long.compare(lo[a][0], lo[b][0]));
    for (int x = 0; x < order.length; x++) {
      int i = order[x];
      if (isEmpty(i)) {
        continue;
      }
      for (int y = x + 1; y < order.length && lo[order[y]][0] < hi[i][0]; y++) {
        int j = order[y];
        if (isEmpty(j) || !overlaps(i, j)) {
          continue;
        }
        if (!Arrays.equals(lo[i], lo[j]) || !Arrays.equals(hi[i], hi[j])) {
          int a = Math.min(i, j);
          int b = Math.max(i, j);
          throw new IllegalArgumentException(
              "source '"
                  + name
                  + "': shards #"
                  + a
                  + " (session '"
                  + shards[a].session()
                  + "', box "
                  + box(a)
                  + ") and #"
                  + b
                  + " (session '"
                  + shards[b].session()
                  + "', box "
                  + box(b)
                  + ") overlap with different geometry");
        }
      }
    }
  }

  /**
   * Elements held by the shards, each distinct box counted once. Validation guarantees that boxes
   * which overlap are identical, so this is the covered volume.
   */
  long distinctVolume() {
    long total = 0;
    outer:
    for (int i = 0; i < shards.length; i++) {
      for (int j = 0; j < i; j++) {
        if (Arrays.equals(lo[i], lo[j]) && Arrays.equals(hi[i], hi[j])) {
          continue outer;
        }
      }
      long v = 1;
      for (int d = 0; d < rank; d++) {
        v *= hi[i][d] - lo[i][d];
      }
      total += v;
    }
    return total;
  }

  private boolean isEmpty(int i) {
    for (int d = 0; d < rank; d++) {
      if (hi[i][d] <= lo[i][d]) {
        return true;
      }
    }
    return false;
  }

  private boolean overlaps(int i, int j) {
    for (int d = 0; d < rank; d++) {
      if (Math.max(lo[i][d], lo[j][d]) >= Math.min(hi[i][d], hi[j][d])) {
        return false;
      }
    }
    return true;
  }

  private String box(int i) {
    StringBuilder sb = new StringBuilder("[");
    for (int d = 0; d < rank; d++) {
      sb.append(d == 0 ? "" : ", ").append(lo[i][d]).append(':').append(hi[i][d]);
    }
    return sb.append(']').toString();
  }

  private String where(int i) {
    return "source '" + name + "' shard #" + i + " (session '" + shards[i].session() + "')";
  }
}
