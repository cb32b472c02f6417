package dev.mx.plan;

import dev.mx.api.Box;
import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.plan.view.StridedView;
import java.util.Arrays;

/**
 * {@code resolve_slice} of ModelExpress (ARCHITECTURE §7.3): replays a copy's op chain and accepts
 * it only when the result is a rank-preserving, axis-permuted box of the source, with the exact
 * guards ModelExpress applies.
 */
public final class SliceResolver {
  private SliceResolver() {}

  /**
   * Resolves {@code copy} against a source of shape {@code global}.
   *
   * @throws UnsupportedReshardException naming the source when the chain copies, changes rank, is
   *     no permuted box, or its shape differs from the copy's destination shape
   */
  public static NeededSlice resolve(RecordedCopy copy, Shape global) {
    long[] g = global.dims();
    RawSlice b = resolveRaw(copy, g);
    return new NeededSlice(new Box(b.lo, b.hi), b.destStrideSrc, b.perm);
  }

  /** The resolved box as bare arrays (no defensive copies), for the planner's loops. */
  record RawSlice(long[] lo, long[] hi, long[] destStrideSrc, int[] perm) {}

  static RawSlice resolveRaw(RecordedCopy copy, long[] g) {
    RawSlice fast = narrowsOnly(copy, g);
    return fast != null ? fast : replayed(copy, g);
  }

  /**
   * The common chains — empty or only in-range, non-empty {@code narrow}s with plain arguments —
   * resolve without a replay: the view is the box itself, unpermuted. With every extent at least 1
   * the general rules give exactly this (the offset decomposes into unique mixed-radix digits, and
   * only size-1 dims can share a stride). Anything else, including empty extents, takes the general
   * path, which also produces the error messages.
   */
  static RawSlice narrowsOnly(RecordedCopy copy, long[] g) {
    int n = g.length;
    long[] lo = new long[n];
    long[] hi = g.clone();
    for (long extent : g) {
      if (extent < 1) {
        return null;
      }
    }
    for (dev.mx.api.plan.OpSpec op : copy.opChain()) {
      if (!op.name().equals("narrow")
          || op.args().size() != 3
          || !op.kwargs().isEmpty()
          || !(op.args().get(0) instanceof Long dim)
          || !(op.args().get(1) instanceof Long start)
          || !(op.args().get(2) instanceof Long length)
          || dim < 0
          || dim >= n
          || start < 0
          || length < 1
          || start + length > hi[dim.intValue()] - lo[dim.intValue()]) {
        return null;
      }
      int d = dim.intValue();
      lo[d] += start;
      hi[d] = lo[d] + length;
    }
    Shape destShape = copy.destShape();
    if (destShape.rank() != n) {
      return null;
    }
    for (int d = 0; d < n; d++) {
      if (destShape.dim(d) != hi[d] - lo[d]) {
        return null;
      }
    }
    int[] perm = new int[n];
    for (int d = 0; d < n; d++) {
      perm[d] = d;
    }
    return new RawSlice(lo, hi, copy.destStride(), perm);
  }

  static RawSlice replayed(RecordedCopy copy, long[] g) {
    String src = copy.srcName();
    Shape global = Shape.of(g);
    StridedView v = StridedView.replay(global, copy.opChain(), src);
    if (v.materialized()) {
      throw new UnsupportedReshardException(
          src, "op-chain includes a copy (" + v.materializedBy() + " in " + copy.opChain() + ")");
    }
    int n = global.rank();
    long[] vShape = v.shape();
    if (vShape.length != n) {
      throw new UnsupportedReshardException(
          src,
          "op-chain "
              + copy.opChain()
              + " changes the rank from "
              + n
              + " to "
              + vShape.length
              + " (shape "
              + Arrays.toString(vShape)
              + ")");
    }
    long[] vStride = v.strides();
    long vOffset = v.offset();
    long[] gs = global.rowMajorStrides();

    int[] perm = new int[n];
    boolean[] used = new boolean[n];
    for (int d = 0; d < n; d++) {
      if (vShape[d] == 1) {
        perm[d] = -1;
        continue;
      }
      int s = firstDimWithStride(gs, vStride[d]);
      if (s < 0) {
        throw new UnsupportedReshardException(
            src,
            "op-chain "
                + copy.opChain()
                + " yields stride "
                + vStride[d]
                + " in dim "
                + d
                + ", which is no source-dim stride "
                + Arrays.toString(gs)
                + " (non-permutation stride, e.g. a dim-merging reshape or a stepped slice)");
      }
      if (used[s]) {
        throw notAPermutation(copy, vShape, vStride);
      }
      perm[d] = s;
      used[s] = true;
    }
    // Size-1 view dims take the unused source dims in increasing order.
    int next = 0;
    for (int d = 0; d < n; d++) {
      if (perm[d] < 0) {
        while (next < n && used[next]) {
          next++;
        }
        if (next == n) {
          throw notAPermutation(copy, vShape, vStride);
        }
        perm[d] = next;
        used[next] = true;
      }
    }

    long[] lo = new long[n];
    long check = 0;
    for (int s = 0; s < n; s++) {
      lo[s] = g[s] == 0 ? 0 : Math.floorMod(Math.floorDiv(vOffset, gs[s]), g[s]);
      check += lo[s] * gs[s];
    }
    long[] boxLo = new long[n];
    long[] boxHi = new long[n];
    long[] destStrideSrc = new long[n];
    long[] destStride = copy.destStride();
    for (int d = 0; d < n; d++) {
      int s = perm[d];
      boxLo[s] = lo[s];
      boxHi[s] = lo[s] + vShape[d];
      destStrideSrc[s] = destStride[d];
    }
    for (int s = 0; s < n; s++) {
      if (boxHi[s] > g[s]) {
        throw new UnsupportedReshardException(
            src,
            "op-chain "
                + copy.opChain()
                + " resolves to a box ending at "
                + boxHi[s]
                + " in source dim "
                + s
                + " of extent "
                + g[s]);
      }
    }
    if (check != vOffset) {
      throw new UnsupportedReshardException(
          src,
          "op-chain "
              + copy.opChain()
              + " has view offset "
              + vOffset
              + " that does not decompose into per-dim starts "
              + Arrays.toString(lo));
    }
    if (!Arrays.equals(vShape, copy.destShape().dims())) {
      throw new UnsupportedReshardException(
          src,
          "op-chain "
              + copy.opChain()
              + " yields shape "
              + Arrays.toString(vShape)
              + " but the destination in '"
              + copy.paramName()
              + "' has shape "
              + copy.destShape());
    }
    return new RawSlice(boxLo, boxHi, destStrideSrc, perm);
  }

  private static int firstDimWithStride(long[] gs, long stride) {
    for (int s = 0; s < gs.length; s++) {
      if (gs[s] == stride) {
        return s;
      }
    }
    return -1;
  }

  private static UnsupportedReshardException notAPermutation(
      RecordedCopy copy, long[] vShape, long[] vStride) {
    return new UnsupportedReshardException(
        copy.srcName(),
        "op-chain "
            + copy.opChain()
            + " yields shape "
            + Arrays.toString(vShape)
            + " strides "
            + Arrays.toString(vStride)
            + ", which is no permutation of the"
            + " source dims");
  }
}
