package dev.mx.plan;

import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Rejects planning inputs that cannot describe a real transfer, before any planning (issue 12):
 * byte counts of a source, shard or destination that overflow a {@code long}; negative shard
 * addresses or a shard whose last byte lies past {@code 2^63 - 1}; shards that leave holes or
 * overlap ({@link ShardTiling}) unless the source is declared partial; destination views whose
 * strides make two elements of one copy land on one byte; negative destination strides. Each error
 * is a {@link PlanInputException} whose message starts with the JSON path at fault in the {@code mx
 * plan} request format.
 */
public final class PlanInputCheck {
  /**
   * Destinations up to this many elements whose strides interleave are checked element by element.
   */
  private static final long MAX_ENUMERATED = 1L << 22;

  private PlanInputCheck() {}

  /**
   * Checks every source, then every copy (in capture order).
   *
   * @throws PlanInputException naming the JSON path at fault
   */
  public static void check(CaptureResult capture, Map<String, SourceInfo> sources) {
    for (Map.Entry<String, SourceInfo> e : sources.entrySet()) {
      checkSource(e.getKey(), e.getValue());
    }
    List<RecordedCopy> copies = capture.copies();
    for (int i = 0; i < copies.size(); i++) {
      checkCopy(copies.get(i), "copies[" + i + "]");
    }
  }

  /** One source: byte counts, addresses, and (unless partial) the tiling. */
  public static void checkSource(String name, SourceInfo info) {
    String path = "sources." + name;
    bytes(info.globalShape().dims(), info.elsize(), path + ".global_shape");
    List<Shard> shards = info.shards();
    for (int i = 0; i < shards.size(); i++) {
      Shard s = shards.get(i);
      String sp = path + ".shards[" + i + "]";
      long n = bytes(s.shape().dims(), s.elsize(), sp + ".shape");
      if (s.addr() < 0) {
        throw new PlanInputException(
            sp + ".addr",
            "address " + s.addr() + " of the shard of session '" + s.session() + "' is negative");
      }
      if (n > 0 && s.addr() > Long.MAX_VALUE - (n - 1)) {
        throw new PlanInputException(
            sp + ".addr",
            "the shard of session '"
                + s.session()
                + "' at address "
                + s.addr()
                + " with "
                + n
                + " bytes ends past the largest address 2^63-1");
      }
      long[] off = s.shardOffset();
      for (int d = 0; d < off.length && d < s.shape().rank(); d++) {
        if (off[d] > Long.MAX_VALUE - s.shape().dim(d)) {
          throw new PlanInputException(
              sp + ".offset",
              "offset "
                  + Arrays.toString(off)
                  + " plus shape "
                  + s.shape()
                  + " overflows in dim "
                  + d);
        }
      }
    }
    if (!info.partial()) {
      ShardTiling.check(name, info);
    }
  }

  /**
   * One copy: destination byte counts, the last destination byte, and that no two elements share a
   * byte.
   */
  public static void checkCopy(RecordedCopy c, String path) {
    long[] shape = c.destShape().dims();
    long[] stride = c.destStride();
    int elsize = c.destDtype().elementSize();
    long numel = 1;
    try {
      for (long x : shape) {
        numel = Math.multiplyExact(numel, x);
      }
      Math.multiplyExact(numel, (long) elsize);
    } catch (ArithmeticException e) {
      throw new PlanInputException(
          path + ".dest_shape",
          "destination shape "
              + c.destShape()
              + " of "
              + c.destDtype().torchLabel()
              + " holds more than 2^63-1 bytes");
    }
    if (numel == 0) {
      return;
    }
    long last = c.destOffset();
    for (int d = 0; d < shape.length; d++) {
      if (stride[d] < 0) {
        throw new PlanInputException(
            path + ".dest_stride",
            "stride "
                + stride[d]
                + " of dim "
                + d
                + " is negative ("
                + Arrays.toString(stride)
                + ")");
      }
      try {
        last = Math.addExact(last, Math.multiplyExact(shape[d] - 1, stride[d]));
      } catch (ArithmeticException e) {
        throw new PlanInputException(
            path + ".dest_stride",
            "the last element of the destination (offset "
                + c.destOffset()
                + ", shape "
                + c.destShape()
                + ", strides "
                + Arrays.toString(stride)
                + ") lies past 2^63-1");
      }
    }
    if (last > (Long.MAX_VALUE - elsize) / elsize) {
      throw new PlanInputException(
          path + ".dest_offset",
          "the last destination byte of '"
              + c.paramName()
              + "' (element "
              + last
              + " of "
              + elsize
              + " bytes) lies past 2^63-1");
    }
    String alias = aliasing(shape, stride);
    if (alias != null) {
      throw new PlanInputException(
          path + ".dest_stride",
          "strides "
              + Arrays.toString(stride)
              + " over shape "
              + c.destShape()
              + " write two elements of the copy into '"
              + c.paramName()
              + "' at one place: "
              + alias);
    }
  }

  /**
   * Null when the strided layout maps distinct indices to distinct offsets, else a description of
   * two indices that collide. Layouts whose dims nest (sorted by stride, each stride beyond the
   * span of the smaller ones) pass at once; others are enumerated when small enough, refused
   * otherwise.
   */
  static String aliasing(long[] shape, long[] stride) {
    int n = shape.length;
    Integer[] dims = new Integer[n];
    int m = 0;
    for (int d = 0; d < n; d++) {
      if (shape[d] > 1) {
        dims[m++] = d;
      }
    }
    Integer[] live = Arrays.copyOf(dims, m);
    Arrays.sort(live, (a, b) -> Long.compare(stride[a], stride[b]));
    long span = 0; // largest offset reachable with the dims so far
    boolean nested = true;
    for (int d : live) {
      if (stride[d] == 0) {
        return "dim " + d + " has " + shape[d] + " elements and stride 0";
      }
      if (stride[d] <= span) {
        nested = false;
        break;
      }
      span += (shape[d] - 1) * stride[d];
    }
    if (nested) {
      return null;
    }
    long numel = 1;
    for (int d : live) {
      numel *= shape[d];
      if (numel > MAX_ENUMERATED) {
        return "the dims interleave and the view is too large (over "
            + MAX_ENUMERATED
            + " elements) to prove that they never collide";
      }
    }
    long[] offsets = new long[(int) numel];
    long[] idx = new long[n];
    for (int k = 0; k < numel; k++) {
      long o = 0;
      for (int d : live) {
        o += idx[d] * stride[d];
      }
      offsets[k] = o;
      for (int x = live.length - 1; x >= 0; x--) {
        int d = live[x];
        if (++idx[d] < shape[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
    long[] sorted = offsets.clone();
    Arrays.sort(sorted);
    for (int k = 1; k < sorted.length; k++) {
      if (sorted[k] == sorted[k - 1]) {
        return "two elements land at element offset " + sorted[k] + " (relative to dest_offset)";
      }
    }
    return null;
  }

  private static long bytes(long[] dims, int elsize, String path) {
    try {
      long n = elsize;
      for (long d : dims) {
        n = Math.multiplyExact(n, d);
      }
      return n;
    } catch (ArithmeticException e) {
      throw new PlanInputException(
          path,
          "shape "
              + Arrays.toString(dims)
              + " of "
              + elsize
              + "-byte elements holds more than 2^63-1 bytes");
    }
  }
}
