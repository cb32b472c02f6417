package dev.mx.plan.view;

import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import java.util.Arrays;
import java.util.List;

/**
 * A strided view of a contiguous row-major root tensor: element {@code i} (a multi-index) of the
 * view is element {@code offset + Σ i[d]·strides[d]} of the root's flat storage. Everything is in
 * elements.
 *
 * <p>{@link #replay} runs a recorded op chain (ModelExpress; ARCHITECTURE §7.3) on a zero-storage
 * root and reports where the result lands. It also reports whether an op <em>materialized a
 * copy</em> the way PyTorch would ({@code contiguous()} on a non-contiguous view, a {@code
 * reshape}/{@code flatten} that cannot be a view): the planner refuses such chains. A copy does not
 * always lose the mapping to the root: {@code transpose(0, 1).contiguous()} still reads exactly the
 * elements of the transposed view, so {@link #isRootView()} stays true and {@link #offset()}/{@link
 * #strides()} still describe the elements to copy, which is what a receiver needs to replay a full
 * pull locally. Only a reshape that merges dims no stride can express loses it.
 */
public final class StridedView {
  private final long offset;
  private final long[] shape;
  private final long[] strides;
  private final String materializedBy;
  private final boolean rootView;

  StridedView(long offset, long[] shape, long[] strides, String materializedBy, boolean rootView) {
    this.offset = offset;
    this.shape = shape;
    this.strides = strides;
    this.materializedBy = materializedBy;
    this.rootView = rootView;
  }

  /** The whole root tensor: offset 0, row-major strides. */
  public static StridedView root(Shape shape) {
    return new StridedView(0, shape.dims(), shape.rowMajorStrides(), null, true);
  }

  /**
   * Replays {@code chain} on the root of shape {@code global}.
   *
   * @throws UnsupportedReshardException naming the op, for an unknown op, bad arguments, an
   *     impossible {@code view}, or a chain that ends in a tuple ({@code chunk}/{@code unbind} not
   *     followed by an index)
   */
  public static StridedView replay(Shape global, List<OpSpec> chain) {
    return replay(global, chain, null);
  }

  /** As {@link #replay(Shape, List)}, naming {@code source} in errors. */
  public static StridedView replay(Shape global, List<OpSpec> chain, String source) {
    return new ChainReplayer(global, chain, source).run();
  }

  /** Element offset of the view's first element in the root's storage. */
  public long offset() {
    requireRootView();
    return offset;
  }

  /** Extents of the view (a copy). */
  public long[] shape() {
    return shape.clone();
  }

  public long shape(int d) {
    return shape[d];
  }

  /** Strides in elements of the root's storage (a copy). */
  public long[] strides() {
    requireRootView();
    return strides.clone();
  }

  public long stride(int d) {
    requireRootView();
    return strides[d];
  }

  public int rank() {
    return shape.length;
  }

  public long numel() {
    long n = 1;
    for (long s : shape) {
      n = Math.multiplyExact(n, s);
    }
    return n;
  }

  /** True when no op copied: the result aliases the root (what the planner requires). */
  public boolean isPureView() {
    return materializedBy == null;
  }

  /** True when some op materialized a copy. */
  public boolean materialized() {
    return materializedBy != null;
  }

  /** The first op that materialized a copy (e.g. {@code contiguous()}), or null for a pure view. */
  public String materializedBy() {
    return materializedBy;
  }

  /**
   * True when {@link #offset()} and {@link #strides()} describe, element for element, what the
   * chain yields in terms of the root's storage (always true for a pure view; true after a copy
   * unless a reshape merged dims that no single stride can express).
   */
  public boolean isRootView() {
    return rootView;
  }

  /**
   * Row-major contiguous over its own extents (PyTorch's rule: size-1 dims and empty views always
   * are).
   */
  public boolean isContiguous() {
    return Layout.isContiguous(shape, strides);
  }

  private void requireRootView() {
    if (!rootView) {
      throw new UnsupportedReshardException(
          null,
          "op-chain includes a copy ("
              + materializedBy
              + ") whose result is no strided view of the source");
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StridedView v
        && offset == v.offset
        && Arrays.equals(shape, v.shape)
        && Arrays.equals(strides, v.strides)
        && rootView == v.rootView
        && java.util.Objects.equals(materializedBy, v.materializedBy);
  }

  @Override
  public int hashCode() {
    return java.util.Objects.hash(
        offset, Arrays.hashCode(shape), Arrays.hashCode(strides), materializedBy, rootView);
  }

  @Override
  public String toString() {
    return "StridedView[offset "
        + (rootView ? offset : "?")
        + ", shape "
        + Arrays.toString(shape)
        + ", strides "
        + (rootView ? Arrays.toString(strides) : "?")
        + (materializedBy == null ? "" : ", copied by " + materializedBy)
        + "]";
  }
}
