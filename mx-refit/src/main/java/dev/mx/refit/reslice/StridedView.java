package dev.mx.refit.reslice;

import dev.mx.api.Shape;
import java.util.Arrays;

/**
 * A strided view in elements: element {@code i} (a multi-index) sits at {@code offset + Σ i[d]·strides[d]}
 * of the underlying storage. The same triple torch's {@code as_strided(shape, stride, offset)} takes.
 */
public record StridedView(long offset, long[] shape, long[] strides) {

  public StridedView {
    shape = shape.clone();
    strides = strides.clone();
    if (shape.length != strides.length) {
      throw new IllegalArgumentException("view shape " + Arrays.toString(shape) + " and strides "
          + Arrays.toString(strides) + " differ in rank");
    }
    for (long s : shape) {
      if (s < 0) {
        throw new IllegalArgumentException("view shape " + Arrays.toString(shape) + " has a negative extent");
      }
    }
  }

  /** The contiguous row-major view of a whole tensor of this shape. */
  public static StridedView contiguous(Shape shape) {
    return new StridedView(0, shape.dims(), shape.rowMajorStrides());
  }

  @Override
  public long[] shape() {
    return shape.clone();
  }

  @Override
  public long[] strides() {
    return strides.clone();
  }

  public int rank() {
    return shape.length;
  }

  public long shape(int d) {
    return shape[d];
  }

  public long stride(int d) {
    return strides[d];
  }

  public long numel() {
    long n = 1;
    for (long s : shape) {
      n = Math.multiplyExact(n, s);
    }
    return n;
  }

  /** Lowest element offset the view touches (meaningless for an empty view). */
  public long minElement() {
    long lo = offset;
    for (int d = 0; d < shape.length; d++) {
      lo += Math.min(0, (shape[d] - 1) * strides[d]);
    }
    return lo;
  }

  /** Highest element offset the view touches (meaningless for an empty view). */
  public long maxElement() {
    long hi = offset;
    for (int d = 0; d < shape.length; d++) {
      hi += Math.max(0, (shape[d] - 1) * strides[d]);
    }
    return hi;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StridedView v && offset == v.offset && Arrays.equals(shape, v.shape)
        && Arrays.equals(strides, v.strides);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Long.hashCode(offset) + Arrays.hashCode(shape)) + Arrays.hashCode(strides);
  }

  @Override
  public String toString() {
    return "as_strided(" + Arrays.toString(shape) + ", " + Arrays.toString(strides) + ", " + offset + ")";
  }
}
