package dev.mx.refit.fanout;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Experimental;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.plan.view.StridedView;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What an engine's installed weights hold, as shards of the global source tensors: the geometry
 * capture that planned the install, read backwards. Each recorded copy wrote a box of a source
 * tensor (a chain of narrows and slices) into a contiguous run of a parameter, so that run now
 * holds that box, row-major, in the parameter's dtype: one shard to publish, at a byte offset into
 * the parameter. A tensor-parallel slice of a fused QKV parameter gives three (its q, k and v
 * rows); a parameter every rank holds whole gives the whole tensor.
 *
 * <p>A copy that is no box (a transpose, a reshape across rows) or that scatters into its parameter
 * is refused, naming the parameter and the source tensor: such weights cannot be served without a
 * copy of their own.
 */
@Experimental
public final class InstalledShards {
  private InstalledShards() {}

  /**
   * One shard of installed weights: box {@code shape} at {@code shardOffset} of global tensor
   * {@code name} (global shape {@code globalShape}), held in {@code dtype} at {@code byteOffset}
   * bytes into live parameter {@code param}.
   */
  public record Entry(
      String name,
      DType dtype,
      Shape globalShape,
      long[] shardOffset,
      Shape shape,
      String param,
      long byteOffset) {
    public Entry {
      shardOffset = shardOffset.clone();
    }

    @Override
    public long[] shardOffset() {
      return shardOffset.clone();
    }

    /** The bytes of the shard. */
    public long byteSize() {
      return shape.byteSize(dtype.elementSize());
    }
  }

  /**
   * The shards the parameters of {@code capture} hold once every copy was installed, each box once
   * (an expert placed in two slots is served from the first), in copy order.
   *
   * @param manifest the source tensors the capture was made for (their global shapes)
   * @throws UnsupportedReshardException naming the parameter and source tensor of a copy that does
   *     not write a box of its source into a contiguous run of its parameter, or a source installed
   *     in two dtypes
   */
  public static List<Entry> of(Capture capture, List<ManifestEntry> manifest) {
    Map<String, Shape> global = new LinkedHashMap<>();
    for (ManifestEntry e : manifest) {
      global.put(e.name(), e.globalShape());
    }
    Map<String, DType> dtypes = new LinkedHashMap<>();
    Set<String> boxes = new HashSet<>();
    List<Entry> out = new ArrayList<>();
    for (RecordedCopy c : capture.result().copies()) {
      Shape g = global.get(c.srcName());
      if (g == null) {
        throw refused(c, "its source is not in the manifest the capture was made for");
      }
      ParamSpec param = capture.paramLayout().get(c.paramName());
      if (param == null) {
        throw refused(c, "its parameter is not in the capture's layout");
      }
      StridedView view = StridedView.replay(g, c.opChain(), c.srcName());
      long[] origin = boxOrigin(c, view, g);
      Shape box = new Shape(view.shape());
      if (box.numel() != c.destShape().numel()
          || !contiguous(c.destShape().dims(), c.destStride())) {
        throw refused(
            c,
            "it writes "
                + c.destShape()
                + " with strides "
                + Arrays.toString(c.destStride())
                + ", not one contiguous run of the box "
                + box);
      }
      DType before = dtypes.putIfAbsent(c.srcName(), c.destDtype());
      if (before != null && before != c.destDtype()) {
        throw refused(
            c,
            "the source is installed as "
                + before.shortName()
                + " and as "
                + c.destDtype().shortName());
      }
      long byteOffset = c.destOffset() * c.destDtype().elementSize();
      if (byteOffset + box.byteSize(c.destDtype().elementSize()) > param.byteSize()) {
        throw refused(c, "it writes past the end of its parameter");
      }
      if (boxes.add(c.srcName() + Arrays.toString(origin) + box)) {
        out.add(new Entry(c.srcName(), c.destDtype(), g, origin, box, c.paramName(), byteOffset));
      }
    }
    return List.copyOf(out);
  }

  /**
   * Where the box {@code c} reads ({@code v}, its chain replayed) starts in its source of shape
   * {@code global}.
   *
   * @throws UnsupportedReshardException when the chain's view is no box (strides other than the
   *     source's row-major ones, or a copy)
   */
  private static long[] boxOrigin(RecordedCopy c, StridedView v, Shape global) {
    long[] rowMajor = global.rowMajorStrides();
    if (!v.isPureView() || v.rank() != global.rank()) {
      throw refused(c, "its op chain " + c.opChain() + " is not a box of its source");
    }
    for (int d = 0; d < v.rank(); d++) {
      if (v.shape(d) > 1 && v.stride(d) != rowMajor[d]) {
        throw refused(c, "its op chain " + c.opChain() + " is not a box of its source");
      }
    }
    long[] origin = new long[global.rank()];
    long rest = v.offset();
    for (int d = 0; d < origin.length; d++) {
      origin[d] = rowMajor[d] == 0 ? 0 : rest / rowMajor[d];
      rest -= origin[d] * rowMajor[d];
      if (origin[d] + v.shape(d) > global.dim(d)) {
        throw refused(c, "its op chain " + c.opChain() + " is not a box of its source");
      }
    }
    return origin;
  }

  /** Row-major contiguous (size-1 dimensions may have any stride). */
  private static boolean contiguous(long[] shape, long[] strides) {
    long expected = 1;
    for (int d = shape.length - 1; d >= 0; d--) {
      if (shape[d] != 1 && strides[d] != expected) {
        return false;
      }
      expected *= shape[d];
    }
    return true;
  }

  private static UnsupportedReshardException refused(RecordedCopy c, String why) {
    return new UnsupportedReshardException(
        c.srcName(),
        "parameter '"
            + c.paramName()
            + "' cannot serve its installed weights: the copy from its source '"
            + c.srcName()
            + "' cannot be read back, "
            + why);
  }
}
