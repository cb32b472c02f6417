package dev.mx.plan.view;

import java.util.Arrays;

/**
 * An immutable (offset, shape, strides) triple with PyTorch's view rules. Every op returns a new
 * layout; {@link #view} returns null where PyTorch could not make a view.
 */
final class Layout {
  final long offset;
  final long[] shape;
  final long[] strides;

  Layout(long offset, long[] shape, long[] strides) {
    this.offset = offset;
    this.shape = shape;
    this.strides = strides;
  }

  /** A fresh contiguous tensor of this shape (what a copy produces). */
  static Layout contiguous(long[] shape) {
    return new Layout(0, shape.clone(), rowMajor(shape));
  }

  static long[] rowMajor(long[] shape) {
    long[] s = new long[shape.length];
    long acc = 1;
    for (int d = shape.length - 1; d >= 0; d--) {
      s[d] = acc;
      acc *= Math.max(1, shape[d]);
    }
    return s;
  }

  /**
   * PyTorch's {@code is_contiguous}: ignoring size-1 dims, strides are row-major; empty tensors
   * are.
   */
  static boolean isContiguous(long[] shape, long[] strides) {
    long expected = 1;
    for (int d = shape.length - 1; d >= 0; d--) {
      if (shape[d] == 0) {
        return true;
      }
    }
    for (int d = shape.length - 1; d >= 0; d--) {
      if (shape[d] != 1) {
        if (strides[d] != expected) {
          return false;
        }
        expected *= shape[d];
      }
    }
    return true;
  }

  boolean isContiguous() {
    return isContiguous(shape, strides);
  }

  long numel() {
    long n = 1;
    for (long s : shape) {
      n = Math.multiplyExact(n, s);
    }
    return n;
  }

  /** Keeps {@code [start, start + length)} of dim {@code d}, every {@code step}-th element. */
  Layout slice(int d, long start, long length, long step) {
    long[] sh = shape.clone();
    long[] st = strides.clone();
    sh[d] = length;
    st[d] = strides[d] * step;
    return new Layout(offset + start * strides[d], sh, st);
  }

  /** Index {@code i} of dim {@code d}; the dim disappears. */
  Layout select(int d, long i) {
    return new Layout(offset + i * strides[d], remove(shape, d), remove(strides, d));
  }

  /** Inserts a size-1 dim at {@code d} (0..rank), with PyTorch's stride for it. */
  Layout unsqueeze(int d) {
    long stride = d >= shape.length ? 1 : shape[d] * strides[d];
    return new Layout(offset, insert(shape, d, 1), insert(strides, d, stride));
  }

  /** Drops dim {@code d}, which must have size 1. */
  Layout squeeze(int d) {
    return new Layout(offset, remove(shape, d), remove(strides, d));
  }

  /** Result dim {@code i} is this layout's dim {@code perm[i]}. */
  Layout permute(int[] perm) {
    long[] sh = new long[perm.length];
    long[] st = new long[perm.length];
    for (int i = 0; i < perm.length; i++) {
      sh[i] = shape[perm[i]];
      st[i] = strides[perm[i]];
    }
    return new Layout(offset, sh, st);
  }

  /**
   * The same elements under {@code newShape} (same element count) as a view, or null if no strides
   * can.
   */
  Layout view(long[] newShape) {
    long[] st = computeStride(shape, strides, newShape);
    return st == null ? null : new Layout(offset, newShape.clone(), st);
  }

  /**
   * PyTorch's stride computation for {@code view}: old dims are grouped into chunks that are
   * contiguous among themselves; each chunk must be covered exactly by a run of new dims.
   */
  static long[] computeStride(long[] oldShape, long[] oldStride, long[] newShape) {
    int newRank = newShape.length;
    long[] newStride = new long[newRank];
    if (oldShape.length == 0) {
      Arrays.fill(newStride, 1);
      return newStride;
    }
    long numel = 1;
    for (long s : oldShape) {
      numel *= s;
    }
    if (numel == 0) {
      if (Arrays.equals(oldShape, newShape)) {
        return oldStride.clone();
      }
      for (int d = newRank - 1; d >= 0; d--) {
        newStride[d] = d == newRank - 1 ? 1 : Math.max(newShape[d + 1], 1) * newStride[d + 1];
      }
      return newStride;
    }
    int viewD = newRank - 1;
    long chunkBaseStride = oldStride[oldStride.length - 1];
    long tensorNumel = 1;
    long viewNumel = 1;
    for (int tensorD = oldShape.length - 1; tensorD >= 0; tensorD--) {
      tensorNumel *= oldShape[tensorD];
      boolean chunkEnds =
          tensorD == 0
              || (oldShape[tensorD - 1] != 1
                  && oldStride[tensorD - 1] != tensorNumel * chunkBaseStride);
      if (chunkEnds) {
        while (viewD >= 0 && (viewNumel < tensorNumel || newShape[viewD] == 1)) {
          newStride[viewD] = viewNumel * chunkBaseStride;
          viewNumel *= newShape[viewD];
          viewD--;
        }
        if (viewNumel != tensorNumel) {
          return null;
        }
        if (tensorD > 0) {
          chunkBaseStride = oldStride[tensorD - 1];
          tensorNumel = 1;
          viewNumel = 1;
        }
      }
    }
    return viewD == -1 ? newStride : null;
  }

  private static long[] remove(long[] a, int d) {
    long[] r = new long[a.length - 1];
    System.arraycopy(a, 0, r, 0, d);
    System.arraycopy(a, d + 1, r, d, a.length - d - 1);
    return r;
  }

  private static long[] insert(long[] a, int d, long v) {
    long[] r = new long[a.length + 1];
    System.arraycopy(a, 0, r, 0, d);
    r[d] = v;
    System.arraycopy(a, d, r, d + 1, a.length - d);
    return r;
  }
}
