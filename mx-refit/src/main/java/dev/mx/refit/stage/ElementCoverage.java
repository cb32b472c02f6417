package dev.mx.refit.stage;

import dev.mx.api.Box;
import dev.mx.api.annotation.Internal;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.reslice.AsStrided;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The element coverage gate (issue 12): before anything is installed, every element of every
 * parameter the engine loads must be written by the plan exactly once — by an exact segment, a cast
 * out of convert staging, a copy out of a full pull or a copy out of a staged shard — or be
 * declared padding by the geometry source. A hole or a doubly written element fails the refit,
 * naming the parameter and the first bad box. Staging buffers are held to the same rule (every byte
 * read exactly once), so a full pull or a convert with a missing shard cannot hand stale staging
 * bytes to a copy.
 *
 * <p>Works on element intervals: each parameter collects the {@code [start, end)} runs written into
 * it; sorting starts and ends separately and checking {@code start[i+1] == end[i]} proves an exact
 * tiling (the coverage count is then 1 everywhere), in O(n log n) on primitive arrays.
 */
@Internal
public final class ElementCoverage {

  private final Map<String, Intervals> writes = new LinkedHashMap<>();

  private ElementCoverage() {}

  /** Intervals of one target (a parameter or a staging buffer) in its element units. */
  static final class Intervals {
    long[] starts = new long[16];
    long[] ends = new long[16];
    int n;

    void add(long start, long end) {
      if (end <= start) {
        return;
      }
      // Coalesce with the previous run when contiguous, which keeps row-by-row views compact.
      if (n > 0 && ends[n - 1] == start) {
        ends[n - 1] = end;
        return;
      }
      if (n == starts.length) {
        starts = Arrays.copyOf(starts, n * 2);
        ends = Arrays.copyOf(ends, n * 2);
      }
      starts[n] = start;
      ends[n] = end;
      n++;
    }
  }

  /**
   * Checks a plan against the capture it was planned from.
   *
   * @throws IncompleteRefitException naming the parameter (or staging buffer) and its first missing
   *     or doubly written box
   */
  public static void check(Capture capture, Map<String, SourceInfo> sources, TransferPlan plan) {
    ElementCoverage cov = new ElementCoverage();
    Map<String, ParamSpec> layout = capture.paramLayout();
    for (PullSegment s : plan.segments()) {
      cov.addBytes("param " + s.paramName(), spec(layout, s.paramName()).dtype().elementSize(), s);
    }
    for (FullPullSource f : plan.fullPulls()) {
      String staging = "full-pull staging of '" + f.srcName() + "'";
      for (PullSegment s : f.segments()) {
        cov.addBytes(staging, 1, s);
      }
      cov.requireTiled(staging, f.globalShape().byteSize(f.elsize()), null);
      for (RecordedCopy c : f.copies()) {
        cov.addView("param " + c.paramName(), AsStrided.destinationOf(c));
      }
    }
    List<ConvertMatch.Target> converts = ConvertMatch.match(capture, sources, plan);
    for (int i = 0; i < plan.converts().size(); i++) {
      ConvertSource cs = plan.converts().get(i);
      String staging = "convert staging #" + i + " of '" + cs.paramName() + "'";
      for (PullSegment s : cs.segments()) {
        cov.addBytes(staging, 1, s);
      }
      cov.requireTiled(staging, cs.destShape().byteSize(cs.srcDtype().elementSize()), null);
      cov.addView("param " + cs.paramName(), converts.get(i).view());
    }
    for (StagedShard st : plan.stagedShards()) {
      for (RecordedCopy c : st.copies()) {
        cov.addView("param " + c.paramName(), AsStrided.destinationOf(c));
      }
    }
    for (Map.Entry<String, ParamSpec> e : layout.entrySet()) {
      String key = "param " + e.getKey();
      Shape2 shape = new Shape2(e.getValue().shape().dims());
      for (Box pad : capture.padding().getOrDefault(e.getKey(), List.of())) {
        cov.addBox(key, shape, pad);
      }
      cov.requireTiled(key, e.getValue().shape().numel(), shape);
    }
    for (String key : cov.writes.keySet()) {
      if (key.startsWith("param ") && !layout.containsKey(key.substring(6))) {
        throw new IncompleteRefitException(
            "the plan writes "
                + key
                + " but the engine's parameter layout has no"
                + " such parameter",
            List.of(key.substring(6)));
      }
    }
  }

  private static ParamSpec spec(Map<String, ParamSpec> layout, String param) {
    ParamSpec p = layout.get(param);
    if (p == null) {
      throw new IncompleteRefitException(
          "the plan writes param "
              + param
              + " but the engine's parameter layout"
              + " has no such parameter",
          List.of(param));
    }
    return p;
  }

  private Intervals of(String key) {
    return writes.computeIfAbsent(key, k -> new Intervals());
  }

  private void addBytes(String key, int elsize, PullSegment s) {
    if (s.dstByte() % elsize != 0 || s.nbytes() % elsize != 0) {
      throw new IncompleteRefitException(
          "a segment from session '"
              + s.session()
              + "' writes bytes ["
              + s.dstByte()
              + ", "
              + (s.dstByte() + s.nbytes())
              + ") of "
              + key
              + ", not whole "
              + elsize
              + "-byte elements",
          List.of(key));
    }
    of(key).add(s.dstByte() / elsize, (s.dstByte() + s.nbytes()) / elsize);
  }

  /** Every element a strided view touches, as runs along its innermost unit-stride dimension. */
  private void addView(String key, AsStrided v) {
    Intervals iv = of(key);
    int rank = v.rank();
    if (v.numel() == 0) {
      return;
    }
    if (rank == 0) {
      iv.add(v.offset(), v.offset() + 1);
      return;
    }
    // Merge dims that are contiguous across each other (innermost first), so a row-major block is
    // one run.
    long inner = 1;
    int d = rank - 1;
    while (d >= 0 && v.shape(d) == 1) {
      d--;
    }
    if (d < 0) {
      iv.add(v.offset(), v.offset() + 1);
      return;
    }
    if (v.stride(d) == 1) {
      inner = v.shape(d);
      d--;
      while (d >= 0 && (v.shape(d) == 1 || v.stride(d) == inner)) {
        inner *= v.shape(d);
        d--;
      }
    }
    int outerRank = d + 1;
    long[] idx = new long[outerRank];
    while (true) {
      long at = v.offset();
      for (int k = 0; k < outerRank; k++) {
        at += idx[k] * v.stride(k);
      }
      iv.add(at, at + inner);
      int k = outerRank - 1;
      while (k >= 0 && ++idx[k] == v.shape(k)) {
        idx[k] = 0;
        k--;
      }
      if (k < 0) {
        break;
      }
    }
  }

  private void addBox(String key, Shape2 shape, Box box) {
    long[] strides = shape.strides();
    long[] lo = box.lo();
    long[] size = box.shape().dims();
    long offset = 0;
    for (int k = 0; k < lo.length; k++) {
      if (box.hi(k) > shape.dims[k]) {
        throw new IllegalArgumentException(
            "padding box "
                + box
                + " of "
                + key
                + " reaches outside its shape "
                + Arrays.toString(shape.dims));
      }
      offset += lo[k] * strides[k];
    }
    addView(key, new AsStrided(offset, size, strides));
  }

  /** Requires the intervals written into {@code key} to tile {@code [0, numel)} exactly once. */
  private void requireTiled(String key, long numel, Shape2 shape) {
    Intervals iv = writes.get(key);
    int n = iv == null ? 0 : iv.n;
    long[] s = n == 0 ? new long[0] : Arrays.copyOf(iv.starts, n);
    long[] e = n == 0 ? new long[0] : Arrays.copyOf(iv.ends, n);
    Arrays.sort(s);
    Arrays.sort(e);
    boolean ok = numel == 0 ? n == 0 : n > 0 && s[0] == 0 && e[n - 1] == numel;
    for (int i = 0; ok && i + 1 < n; i++) {
      ok = s[i + 1] == e[i];
    }
    if (!ok) {
      throw failure(key, numel, shape, s, e);
    }
  }

  /** Sweeps the start/end events to find the first element covered zero or more than one time. */
  private static IncompleteRefitException failure(
      String key, long numel, Shape2 shape, long[] s, long[] e) {
    int i = 0;
    int j = 0;
    int count = 0;
    long x = 0;
    while (true) {
      while (i < s.length && s[i] == x) {
        count++;
        i++;
      }
      while (j < e.length && e[j] == x) {
        count--;
        j++;
      }
      long next =
          Math.min(i < s.length ? s[i] : Long.MAX_VALUE, j < e.length ? e[j] : Long.MAX_VALUE);
      if (x >= numel) {
        return bad(
            key, numel, shape, "writes past its end, from element " + x, x, Math.max(x + 1, next));
      }
      if (count != 1) {
        long end = Math.min(next, numel);
        return bad(
            key,
            numel,
            shape,
            count == 0 ? "is never written" : "is written " + count + " times",
            x,
            end);
      }
      if (next == Long.MAX_VALUE) {
        return bad(key, numel, shape, "is never written", x, numel); // unreachable when consistent
      }
      x = next;
    }
  }

  private static IncompleteRefitException bad(
      String key, long numel, Shape2 shape, String what, long from, long to) {
    String name = key.startsWith("param ") ? key.substring(6) : key;
    String where =
        shape == null
            ? "bytes [" + from + ", " + to + ")"
            : "box "
                + shape.box(from, to)
                + " (elements ["
                + from
                + ", "
                + to
                + ") of "
                + numel
                + ")";
    return new IncompleteRefitException(
        "element coverage: "
            + key
            + ": "
            + where
            + " "
            + what
            + " by the plan; refusing to install (every element must be written exactly once or declared padding)",
        List.of(name));
  }

  /** A parameter's dims with row-major strides, and how to name an element range as a box. */
  record Shape2(long[] dims) {
    long[] strides() {
      long[] st = new long[dims.length];
      long acc = 1;
      for (int k = dims.length - 1; k >= 0; k--) {
        st[k] = acc;
        acc *= dims[k];
      }
      return st;
    }

    /** The box of the first row-run in {@code [from, to)}: all dims fixed but the innermost. */
    String box(long from, long to) {
      if (dims.length == 0) {
        return "[]";
      }
      long[] st = strides();
      StringBuilder sb = new StringBuilder("[");
      long rem = from;
      for (int k = 0; k < dims.length; k++) {
        long i = rem / st[k];
        rem %= st[k];
        if (k > 0) {
          sb.append(", ");
        }
        if (k == dims.length - 1) {
          long last = Math.min(dims[k], i + (to - from));
          sb.append(i).append(':').append(last);
        } else {
          sb.append(i).append(':').append(i + 1);
        }
      }
      return sb.append(']').toString();
    }
  }
}
