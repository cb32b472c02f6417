package dev.mx.api;

import java.util.Arrays;

/**
 * An axis-aligned, half-open box {@code [lo[d], hi[d])} per dimension, in element coordinates of a
 * global tensor.
 */
public record Box(long[] lo, long[] hi) {

  public Box {
    if (lo.length != hi.length) {
      throw new IllegalArgumentException(
          "box rank mismatch: lo " + Arrays.toString(lo) + " vs hi " + Arrays.toString(hi));
    }
    lo = lo.clone();
    hi = hi.clone();
    for (int d = 0; d < lo.length; d++) {
      if (lo[d] < 0 || hi[d] < lo[d]) {
        throw new IllegalArgumentException(
            "box has a negative extent or origin in dim "
                + d
                + ": lo "
                + Arrays.toString(lo)
                + ", hi "
                + Arrays.toString(hi));
      }
    }
  }

  /** The box {@code [offset, offset + shape)}. */
  public static Box at(long[] offset, Shape shape) {
    if (offset.length != shape.rank()) {
      throw new IllegalArgumentException(
          "offset "
              + Arrays.toString(offset)
              + " has rank "
              + offset.length
              + " but shape "
              + shape
              + " has rank "
              + shape.rank());
    }
    long[] hi = new long[offset.length];
    for (int d = 0; d < offset.length; d++) {
      hi[d] = Math.addExact(offset[d], shape.dim(d));
    }
    return new Box(offset, hi);
  }

  /** The whole of a tensor of this shape. */
  public static Box whole(Shape shape) {
    return new Box(new long[shape.rank()], shape.dims());
  }

  @Override
  public long[] lo() {
    return lo.clone();
  }

  @Override
  public long[] hi() {
    return hi.clone();
  }

  public long lo(int d) {
    return lo[d];
  }

  public long hi(int d) {
    return hi[d];
  }

  public int rank() {
    return lo.length;
  }

  public Shape shape() {
    long[] s = new long[lo.length];
    for (int d = 0; d < lo.length; d++) {
      s[d] = hi[d] - lo[d];
    }
    return new Shape(s);
  }

  public boolean isEmpty() {
    for (int d = 0; d < lo.length; d++) {
      if (hi[d] <= lo[d]) {
        return true;
      }
    }
    return false;
  }

  /** True when {@code other} lies entirely inside this box. */
  public boolean contains(Box other) {
    requireSameRank(other);
    for (int d = 0; d < lo.length; d++) {
      if (other.lo[d] < lo[d] || other.hi[d] > hi[d]) {
        return false;
      }
    }
    return true;
  }

  /** The overlap of two boxes, or {@code null} when they are disjoint (any dim with lo >= hi). */
  public Box intersect(Box other) {
    requireSameRank(other);
    long[] l = new long[lo.length];
    long[] h = new long[lo.length];
    for (int d = 0; d < lo.length; d++) {
      l[d] = Math.max(lo[d], other.lo[d]);
      h[d] = Math.min(hi[d], other.hi[d]);
      if (l[d] >= h[d]) {
        return null;
      }
    }
    return new Box(l, h);
  }

  private void requireSameRank(Box other) {
    if (other.rank() != rank()) {
      throw new IllegalArgumentException("box rank mismatch: " + this + " vs " + other);
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Box b && Arrays.equals(lo, b.lo) && Arrays.equals(hi, b.hi);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(lo) + Arrays.hashCode(hi);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("[");
    for (int d = 0; d < lo.length; d++) {
      if (d > 0) {
        sb.append(", ");
      }
      sb.append(lo[d]).append(':').append(hi[d]);
    }
    return sb.append(']').toString();
  }
}
