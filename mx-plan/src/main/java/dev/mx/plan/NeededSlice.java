package dev.mx.plan;

import java.util.Arrays;

/**
 * What one copy needs from its source (MX §3.2): the half-open box {@code [lo, hi)} in source coordinates,
 * the destination strides re-indexed into source-dim order, and the permutation that maps view dim
 * {@code d} to source dim {@code perm[d]}.
 */
public record NeededSlice(long[] lo, long[] hi, long[] destStrideSrc, int[] perm) {

  public NeededSlice {
    lo = lo.clone();
    hi = hi.clone();
    destStrideSrc = destStrideSrc.clone();
    perm = perm.clone();
  }

  @Override
  public long[] lo() {
    return lo.clone();
  }

  @Override
  public long[] hi() {
    return hi.clone();
  }

  @Override
  public long[] destStrideSrc() {
    return destStrideSrc.clone();
  }

  @Override
  public int[] perm() {
    return perm.clone();
  }

  public int rank() {
    return lo.length;
  }

  public long lo(int d) {
    return lo[d];
  }

  public long hi(int d) {
    return hi[d];
  }

  public long destStrideSrc(int d) {
    return destStrideSrc[d];
  }

  /** Elements in the box. */
  public long numel() {
    long n = 1;
    for (int d = 0; d < lo.length; d++) {
      n *= hi[d] - lo[d];
    }
    return n;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NeededSlice s && Arrays.equals(lo, s.lo) && Arrays.equals(hi, s.hi)
        && Arrays.equals(destStrideSrc, s.destStrideSrc) && Arrays.equals(perm, s.perm);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(lo) * 31 * 31 + Arrays.hashCode(hi) * 31 + Arrays.hashCode(destStrideSrc);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("NeededSlice[");
    for (int d = 0; d < lo.length; d++) {
      sb.append(d == 0 ? "" : ", ").append(lo[d]).append(':').append(hi[d]);
    }
    return sb.append("] dest strides ").append(Arrays.toString(destStrideSrc)).append(" perm ")
        .append(Arrays.toString(perm)).toString();
  }
}
