package dev.mx.api;

import java.util.Arrays;

/**
 * An immutable tensor shape (extents per dimension, each {@code >= 0}). Element counts and byte
 * sizes are {@code long} and checked for overflow.
 */
public record Shape(long[] dims) {

  public Shape {
    dims = dims.clone();
    for (int d = 0; d < dims.length; d++) {
      if (dims[d] < 0) {
        throw new IllegalArgumentException(
            "shape " + Arrays.toString(dims) + " has a negative extent in dim " + d);
      }
    }
  }

  public static Shape of(long... dims) {
    return new Shape(dims);
  }

  public static Shape of(int... dims) {
    long[] l = new long[dims.length];
    for (int i = 0; i < dims.length; i++) {
      l[i] = dims[i];
    }
    return new Shape(l);
  }

  /** A copy of the extents. */
  @Override
  public long[] dims() {
    return dims.clone();
  }

  public int rank() {
    return dims.length;
  }

  public long dim(int d) {
    return dims[d];
  }

  /** Number of elements (1 for a scalar), checked for overflow. */
  public long numel() {
    long n = 1;
    for (long d : dims) {
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  /** Size in bytes at the given element size, checked for overflow. */
  public long byteSize(int elementSize) {
    return Math.multiplyExact(numel(), (long) elementSize);
  }

  /** Row-major (C-contiguous) strides in elements. */
  public long[] rowMajorStrides() {
    long[] s = new long[dims.length];
    long acc = 1;
    for (int d = dims.length - 1; d >= 0; d--) {
      s[d] = acc;
      if (d > 0) {
        // Not past dim 0: the outermost extent is in no stride, and [2^62, 8] has strides [8, 1].
        acc = Math.multiplyExact(acc, Math.max(1, dims[d]));
      }
    }
    return s;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Shape other && Arrays.equals(dims, other.dims);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(dims);
  }

  @Override
  public String toString() {
    return Arrays.toString(dims);
  }
}
