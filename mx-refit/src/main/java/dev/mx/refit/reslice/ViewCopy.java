package dev.mx.refit.reslice;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.memory.MemoryOps;
import dev.mx.refit.cast.Casts;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One compiled view-to-view copy, {@code dst.copy_(src)} with both views over native memory: the
 * element index space is coalesced (size-1 dims dropped, dims merged where both layouts are
 * contiguous across them), leaving an inner run and an outer odometer. Same-type contiguous runs
 * move a row of the innermost outer dim at a time through {@link Casts#copyRuns} (four streams on
 * the Vector API, else one bulk {@link MemorySegment#copy} per run); differing types go through one
 * cast loop per run. Extents are validated once, when the copy is compiled, with an error naming
 * {@code label}. A copy compiled with device {@link MemoryOps} (both segments device memory) runs
 * as one strided kernel launch of those ops instead: one run, never split.
 */
@Internal
public final class ViewCopy {
  private final String label;
  private final MemorySegment src;
  private final DType from;
  private final MemorySegment dst;
  private final DType to;
  private final AsStrided dstView;
  private final long srcBase;
  private final long dstBase;

  /** Outer dims, outermost first, with byte strides. */
  private final long[] outerShape;

  private final long[] srcOuter;
  private final long[] dstOuter;
  private final long inner;
  private final long srcInner;
  private final long dstInner;
  private final long outerCount;

  /** Null for host memory. */
  private final MemoryOps device;

  private final AsStrided srcView;

  private ViewCopy(
      String label,
      MemorySegment src,
      DType from,
      MemorySegment dst,
      DType to,
      AsStrided dstView,
      long srcBase,
      long dstBase,
      long[] outerShape,
      long[] srcOuter,
      long[] dstOuter,
      long inner,
      long srcInner,
      long dstInner,
      MemoryOps device,
      AsStrided srcView) {
    this.label = label;
    this.device = device;
    this.srcView = srcView;
    this.src = src;
    this.from = from;
    this.dst = dst;
    this.to = to;
    this.dstView = dstView;
    this.srcBase = srcBase;
    this.dstBase = dstBase;
    this.outerShape = outerShape;
    this.srcOuter = srcOuter;
    this.dstOuter = dstOuter;
    this.inner = inner;
    this.srcInner = srcInner;
    this.dstInner = dstInner;
    long n = 1;
    for (long s : outerShape) {
      n *= s;
    }
    this.outerCount = inner == 0 ? 0 : n;
  }

  /**
   * Compiles {@code dst[dstView] = src[srcView]} (cast from {@code from} to {@code to} when they
   * differ).
   *
   * @param label names the copy in errors, e.g. {@code "full pull 'w' -> param 'p'"}
   * @throws IllegalArgumentException when the shapes differ, the cast is unsupported, or a view
   *     reaches outside its segment
   */
  public static ViewCopy compile(
      String label,
      MemorySegment src,
      DType from,
      AsStrided srcView,
      MemorySegment dst,
      DType to,
      AsStrided dstView) {
    return compile(label, src, from, srcView, dst, to, dstView, null);
  }

  /**
   * As {@link #compile(String, MemorySegment, DType, AsStrided, MemorySegment, DType, AsStrided)},
   * run by {@code device}'s strided copy when it is not null (both segments are then that device's
   * memory).
   */
  public static ViewCopy compile(
      String label,
      MemorySegment src,
      DType from,
      AsStrided srcView,
      MemorySegment dst,
      DType to,
      AsStrided dstView,
      MemoryOps device) {
    if (!Arrays.equals(srcView.shape(), dstView.shape())) {
      throw new IllegalArgumentException(
          label
              + ": source view shape "
              + Arrays.toString(srcView.shape())
              + " differs from destination view shape "
              + Arrays.toString(dstView.shape()));
    }
    if (device == null ? !Casts.supports(from, to) : !device.supportsCast(from, to)) {
      throw new IllegalArgumentException(
          label
              + ": cannot convert "
              + from
              + " to "
              + to
              + (device == null ? "" : " on " + device.kind()));
    }
    boolean empty = srcView.numel() == 0;
    if (!empty) {
      checkInside(label, "source", srcView, from, src);
      checkInside(label, "destination", dstView, to, dst);
    }
    // Drop size-1 dims, then merge each dim into the next inner one where both layouts allow.
    List<long[]> dims =
        new ArrayList<>(); // {extent, srcStride, dstStride} in elements, outermost first
    for (int d = 0; d < srcView.rank(); d++) {
      if (srcView.shape(d) != 1) {
        dims.add(new long[] {srcView.shape(d), srcView.stride(d), dstView.stride(d)});
      }
    }
    for (int i = dims.size() - 2; i >= 0; i--) {
      long[] outer = dims.get(i);
      long[] in = dims.get(i + 1);
      if (outer[1] == in[1] * in[0] && outer[2] == in[2] * in[0]) {
        dims.set(i, new long[] {outer[0] * in[0], in[1], in[2]});
        dims.remove(i + 1);
      }
    }
    long fs = from.elementSize();
    long ts = to.elementSize();
    long inner = 1;
    long srcInner = fs;
    long dstInner = ts;
    if (!dims.isEmpty()) {
      long[] last = dims.remove(dims.size() - 1);
      inner = last[0];
      srcInner = last[1] * fs;
      dstInner = last[2] * ts;
    }
    if (empty) {
      inner = 0;
    }
    long[] outerShape = new long[dims.size()];
    long[] srcOuter = new long[dims.size()];
    long[] dstOuter = new long[dims.size()];
    for (int i = 0; i < dims.size(); i++) {
      outerShape[i] = dims.get(i)[0];
      srcOuter[i] = dims.get(i)[1] * fs;
      dstOuter[i] = dims.get(i)[2] * ts;
    }
    return new ViewCopy(
        label,
        src,
        from,
        dst,
        to,
        dstView,
        srcView.offset() * fs,
        dstView.offset() * ts,
        outerShape,
        srcOuter,
        dstOuter,
        inner,
        srcInner,
        dstInner,
        device,
        srcView);
  }

  private static void checkInside(
      String label, String what, AsStrided view, DType type, MemorySegment seg) {
    long lo = view.minElement();
    long hi = view.maxElement();
    long size = type.elementSize();
    if (lo < 0 || (hi + 1) * size > seg.byteSize()) {
      throw new IllegalArgumentException(
          label
              + ": "
              + what
              + " view "
              + view
              + " of "
              + type
              + " touches elements ["
              + lo
              + ", "
              + hi
              + "] outside a buffer of "
              + seg.byteSize() / size
              + " element(s)");
    }
  }

  public String label() {
    return label;
  }

  /** Bytes written into the destination. */
  public long destinationBytes() {
    return outerCount * inner * to.elementSize();
  }

  /** The destination storage. */
  public MemorySegment destination() {
    return dst;
  }

  /** The destination view in elements of {@link #destinationType()}. */
  public AsStrided destinationView() {
    return dstView;
  }

  public DType destinationType() {
    return to;
  }

  /**
   * Number of inner runs; {@link #run(long, long)} splits the copy along this index (one on a
   * device).
   */
  public long runCount() {
    return device == null || outerCount == 0 ? outerCount : 1;
  }

  /** The device operations that run this copy, or null when it runs on the CPU. */
  public MemoryOps device() {
    return device;
  }

  /** Elements per inner run. */
  public long runLength() {
    return inner;
  }

  /** Copies everything. */
  public void run() {
    run(0, outerCount);
  }

  /**
   * Copies inner runs {@code [first, end)} (row-major over the outer dims); disjoint ranges may run
   * in parallel. Runs are handed over a row of the innermost outer dim at a time, so a same-type
   * copy moves a whole row of equally spaced runs in one {@link Casts#copyRuns} call (four streams
   * at a time).
   */
  public void run(long first, long end) {
    if (first >= end) {
      return;
    }
    if (device != null) {
      // One launch covers every run; runCount() is 1, so a range is the whole copy.
      device.viewCopy(
          src,
          srcView.offset(),
          from,
          srcView.strides(),
          dst,
          dstView.offset(),
          to,
          dstView.strides(),
          srcView.shape());
      return;
    }
    boolean bulk = from == to && srcInner == from.elementSize() && dstInner == to.elementSize();
    long bulkBytes = inner * from.elementSize();
    int k = outerShape.length;
    if (k == 0) {
      runRow(bulk, bulkBytes, srcBase, 0, dstBase, 0, 1);
      return;
    }
    long[] idx = new long[k];
    long so = srcBase;
    long d0 = dstBase;
    long rem = first;
    for (int i = k - 1; i >= 0; i--) {
      idx[i] = rem % outerShape[i];
      rem /= outerShape[i];
      so += idx[i] * srcOuter[i];
      d0 += idx[i] * dstOuter[i];
    }
    int last = k - 1;
    long r = first;
    while (r < end) {
      long n = Math.min(outerShape[last] - idx[last], end - r);
      runRow(bulk, bulkBytes, so, srcOuter[last], d0, dstOuter[last], n);
      r += n;
      idx[last] += n;
      so += n * srcOuter[last];
      d0 += n * dstOuter[last];
      // Carry the odometer into the outer dims once the innermost outer dim wraps.
      for (int i = last; i >= 0 && idx[i] == outerShape[i]; i--) {
        so -= idx[i] * srcOuter[i];
        d0 -= idx[i] * dstOuter[i];
        idx[i] = 0;
        if (i > 0) {
          idx[i - 1]++;
          so += srcOuter[i - 1];
          d0 += dstOuter[i - 1];
        }
      }
    }
  }

  /** {@code n} inner runs {@code srcStep} / {@code dstStep} bytes apart. */
  private void runRow(
      boolean bulk, long bulkBytes, long so, long srcStep, long d0, long dstStep, long n) {
    if (bulk) {
      Casts.copyRuns(src, so, srcStep, dst, d0, dstStep, bulkBytes, n);
      return;
    }
    for (long j = 0; j < n; j++) {
      Casts.convertRun(
          src, so + j * srcStep, srcInner, from, dst, d0 + j * dstStep, dstInner, to, inner);
    }
  }

  @Override
  public String toString() {
    return label
        + " ("
        + outerCount
        + " run(s) of "
        + inner
        + " "
        + from
        + (from == to ? "" : " -> " + to)
        + (device == null ? "" : " on " + device.kind())
        + ")";
  }
}
