package dev.mx.plan;

import dev.mx.api.Box;
import java.util.Arrays;
import java.util.Objects;

/**
 * What one copy needs from its source (ModelExpress; ARCHITECTURE §7.3): the box in source
 * coordinates, the destination strides re-indexed into source-dim order, and the permutation that
 * maps view dim {@code d} to source dim {@code perm[d]}.
 */
public record NeededSlice(Box box, long[] destStrideSrc, int[] perm) {

  public NeededSlice {
    Objects.requireNonNull(box, "box");
    destStrideSrc = destStrideSrc.clone();
    perm = perm.clone();
  }

  @Override
  public long[] destStrideSrc() {
    return destStrideSrc.clone();
  }

  @Override
  public int[] perm() {
    return perm.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NeededSlice s
        && box.equals(s.box)
        && Arrays.equals(destStrideSrc, s.destStrideSrc)
        && Arrays.equals(perm, s.perm);
  }

  @Override
  public int hashCode() {
    return (box.hashCode() * 31 + Arrays.hashCode(destStrideSrc)) * 31 + Arrays.hashCode(perm);
  }

  @Override
  public String toString() {
    return "NeededSlice["
        + box
        + " dest strides "
        + Arrays.toString(destStrideSrc)
        + " perm "
        + Arrays.toString(perm)
        + "]";
  }
}
