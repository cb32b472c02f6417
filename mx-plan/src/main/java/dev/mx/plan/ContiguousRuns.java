package dev.mx.plan;

/**
 * {@code paired_runs} of ModelExpress (ARCHITECTURE §7.3): decomposes the overlap of a needed box
 * and a shard into runs that are contiguous in both the shard buffer and the destination. A
 * trailing dim joins the run only while its stride equals the running run length in <em>both</em>
 * layouts; the leading dims are enumerated in row-major order (dim 0 outermost). Descriptor counts
 * and order are part of the contract.
 *
 * <p>One instance is reused across overlaps (no allocation per run beyond the emitted segments).
 */
final class ContiguousRuns {
  private final int rank;
  private final long[] size;
  private final long[] idx;
  private int leading;
  private long runLength;
  private long srcBase;
  private long dstBase;
  private long[] srcStride;
  private long[] dstStride;

  ContiguousRuns(int rank) {
    this.rank = rank;
    this.size = new long[rank];
    this.idx = new long[rank];
  }

  /**
   * Sets up the overlap of {@code [needLo, needHi)} and {@code [shardLo, shardHi)}; returns false
   * when they are disjoint (some dim with lo >= hi).
   */
  boolean overlap(
      long[] needLo,
      long[] needHi,
      long[] shardLo,
      long[] shardHi,
      long[] srcStride,
      long[] dstStride) {
    long sb = 0;
    long db = 0;
    for (int d = 0; d < rank; d++) {
      long lo = Math.max(needLo[d], shardLo[d]);
      long hi = Math.min(needHi[d], shardHi[d]);
      if (lo >= hi) {
        return false;
      }
      size[d] = hi - lo;
      sb += (lo - shardLo[d]) * srcStride[d];
      db += (lo - needLo[d]) * dstStride[d];
    }
    this.srcStride = srcStride;
    this.dstStride = dstStride;
    this.srcBase = sb;
    this.dstBase = db;
    long run = 1;
    int p = rank;
    while (p > 0 && srcStride[p - 1] == run && dstStride[p - 1] == run) {
      run *= size[p - 1];
      p--;
    }
    this.leading = p;
    this.runLength = run;
    return true;
  }

  /** Number of runs of the current overlap. */
  long count() {
    long n = 1;
    for (int d = 0; d < leading; d++) {
      n *= size[d];
    }
    return n;
  }

  /** Elements in the current overlap. */
  long elements() {
    return count() * runLength;
  }

  /**
   * Appends one segment per run of the current overlap: source bytes at {@code srcAddr +
   * srcElem·elsize}, destination byte {@code (destOffset + dstElem)·elsize}.
   */
  void emit(
      SegmentList.Builder out,
      String session,
      long srcAddr,
      int srcElsize,
      String param,
      long destOffset,
      int elsize) {
    long nbytes = runLength * elsize;
    int p = leading;
    if (p == 0) {
      out.add(
          session, srcAddr + srcBase * srcElsize, param, (destOffset + dstBase) * elsize, nbytes);
      return;
    }
    if (p == 1) {
      long n = size[0];
      long ss = srcStride[0];
      long ds = dstStride[0];
      long s = srcBase;
      long t = dstBase;
      for (long i = 0; i < n; i++, s += ss, t += ds) {
        out.add(session, srcAddr + s * srcElsize, param, (destOffset + t) * elsize, nbytes);
      }
      return;
    }
    for (int d = 0; d < p; d++) {
      idx[d] = 0;
    }
    long s = srcBase;
    long t = dstBase;
    long total = count();
    for (long k = 0; k < total; k++) {
      out.add(session, srcAddr + s * srcElsize, param, (destOffset + t) * elsize, nbytes);
      for (int d = p - 1; d >= 0; d--) {
        s += srcStride[d];
        t += dstStride[d];
        if (++idx[d] < size[d]) {
          break;
        }
        s -= size[d] * srcStride[d];
        t -= size[d] * dstStride[d];
        idx[d] = 0;
      }
    }
  }
}
