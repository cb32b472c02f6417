package dev.mx.refit.reslice;

import dev.mx.api.Shape;
import dev.mx.api.annotation.Internal;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.plan.view.StridedView;
import java.util.Arrays;
import java.util.List;

/**
 * A strided view in elements: element {@code i} (a multi-index) sits at {@code offset + Σ
 * i[d]·strides[d]} of the underlying storage. The same triple torch's {@code as_strided(shape,
 * stride, offset)} takes.
 */
@Internal
public record AsStrided(long offset, long[] shape, long[] strides) {

  public AsStrided {
    shape = shape.clone();
    strides = strides.clone();
    if (shape.length != strides.length) {
      throw new IllegalArgumentException(
          "view shape "
              + Arrays.toString(shape)
              + " and strides "
              + Arrays.toString(strides)
              + " differ in rank");
    }
    for (long s : shape) {
      if (s < 0) {
        throw new IllegalArgumentException(
            "view shape " + Arrays.toString(shape) + " has a negative extent");
      }
    }
  }

  /** The contiguous row-major view of a whole tensor of this shape. */
  public static AsStrided contiguous(Shape shape) {
    return new AsStrided(0, shape.dims(), shape.rowMajorStrides());
  }

  /**
   * Where a recorded op chain lands when replayed on a contiguous row-major tensor of shape {@code
   * global} (mx-plan's view algebra; a chain whose copy keeps a strided mapping, such as {@code
   * transpose(0, 1).contiguous()}, still yields the elements it reads).
   *
   * @throws UnsupportedReshardException naming {@code source} when the chain is no strided view of
   *     it
   */
  public static AsStrided replay(Shape global, List<OpSpec> chain, String source) {
    StridedView v = StridedView.replay(global, chain, source);
    if (!v.isRootView()) {
      throw new UnsupportedReshardException(
          source,
          "op chain "
              + chain
              + " is no strided view of the source"
              + " (it materialized a copy with "
              + v.materializedBy()
              + ")");
    }
    return new AsStrided(v.offset(), v.shape(), v.strides());
  }

  /**
   * The destination view of a recorded copy: {@code as_strided(destShape, destStride, destOffset)}.
   */
  public static AsStrided destinationOf(RecordedCopy copy) {
    return new AsStrided(copy.destOffset(), copy.destShape().dims(), copy.destStride());
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
    return new Shape(shape).numel();
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
    return o instanceof AsStrided v
        && offset == v.offset
        && Arrays.equals(shape, v.shape)
        && Arrays.equals(strides, v.strides);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * Long.hashCode(offset) + Arrays.hashCode(shape)) + Arrays.hashCode(strides);
  }

  @Override
  public String toString() {
    return "as_strided("
        + Arrays.toString(shape)
        + ", "
        + Arrays.toString(strides)
        + ", "
        + offset
        + ")";
  }
}
