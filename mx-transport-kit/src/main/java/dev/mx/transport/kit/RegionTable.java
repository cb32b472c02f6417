package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import java.util.Arrays;
import java.util.List;

/**
 * An immutable set of non-overlapping memory regions sorted by base address, answering "which
 * region holds {@code [addr, addr + n)} entirely?" in O(log n). Backends use it for the local
 * regions a read may write and the peer regions it may read.
 */
@Internal
public final class RegionTable {
  /** An empty table. */
  public static final RegionTable EMPTY = new RegionTable(new long[0], new long[0], new int[0]);

  private final long[] bases;
  private final long[] ends;
  private final int[] ids;

  private RegionTable(long[] bases, long[] ends, int[] ids) {
    this.bases = bases;
    this.ends = ends;
    this.ids = ids;
  }

  /**
   * One region: base address, length, and an id the caller chooses (e.g. an index into its own
   * list).
   */
  public record Region(long base, long length, int id) {}

  /**
   * Builds a table.
   *
   * @throws IllegalArgumentException when two regions overlap or one wraps the address space
   */
  public static RegionTable of(List<Region> regions) {
    Region[] sorted = regions.toArray(Region[]::new);
    Arrays.sort(sorted, (a, b) -> Long.compareUnsigned(a.base, b.base));
    long[] bases = new long[sorted.length];
    long[] ends = new long[sorted.length];
    int[] ids = new int[sorted.length];
    for (int i = 0; i < sorted.length; i++) {
      Region r = sorted[i];
      if (r.length < 0 || r.base + r.length < r.base) {
        throw new IllegalArgumentException(
            "region at 0x" + Long.toHexString(r.base) + " of " + r.length + " bytes is invalid");
      }
      bases[i] = r.base;
      ends[i] = r.base + r.length;
      ids[i] = r.id;
      if (i > 0 && bases[i] < ends[i - 1]) {
        throw new IllegalArgumentException("regions overlap at 0x" + Long.toHexString(bases[i]));
      }
    }
    return new RegionTable(bases, ends, ids);
  }

  /**
   * A table of a peer's published regions, each region's id its position in {@code regions}.
   *
   * @throws IllegalArgumentException when two regions overlap or one wraps the address space
   */
  public static <T> RegionTable indexed(
      List<T> regions,
      java.util.function.ToLongFunction<T> base,
      java.util.function.ToLongFunction<T> length) {
    List<Region> list = new java.util.ArrayList<>(regions.size());
    for (int i = 0; i < regions.size(); i++) {
      list.add(new Region(base.applyAsLong(regions.get(i)), length.applyAsLong(regions.get(i)), i));
    }
    return of(list);
  }

  /** The id of the region holding all of {@code [addr, addr + n)}, or -1. */
  public int find(long addr, long n) {
    int lo = 0;
    int hi = bases.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (bases[mid] <= addr) {
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    int i = lo - 1;
    if (i < 0) {
      return -1;
    }
    long end = addr + n;
    if (end < addr || end > ends[i]) {
      return -1;
    }
    return ids[i];
  }

  /** Base address of the region with this id. */
  public long base(int id) {
    for (int i = 0; i < ids.length; i++) {
      if (ids[i] == id) {
        return bases[i];
      }
    }
    throw new IllegalArgumentException("no region with id " + id);
  }

  public int size() {
    return bases.length;
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < bases.length; i++) {
      if (i > 0) {
        sb.append(", ");
      }
      sb.append("0x").append(Long.toHexString(bases[i])).append("+").append(ends[i] - bases[i]);
    }
    return sb.append(']').toString();
  }
}
