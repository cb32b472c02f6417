package dev.mx.api.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * "Read source {@code srcName} viewed through {@code opChain}; write it into {@code paramName} at
 * {@code as_strided(destShape, destStride, destOffset)}". Offsets and strides are in elements of
 * the parameter's storage.
 */
public record RecordedCopy(
    String srcName,
    List<OpSpec> opChain,
    String paramName,
    long destOffset,
    Shape destShape,
    long[] destStride,
    DType destDtype) {

  public RecordedCopy {
    Objects.requireNonNull(srcName, "srcName");
    Objects.requireNonNull(paramName, "paramName of copy from '" + srcName + "'");
    Objects.requireNonNull(destShape, "destShape of copy from '" + srcName + "'");
    Objects.requireNonNull(destStride, "destStride of copy from '" + srcName + "'");
    Objects.requireNonNull(destDtype, "destDtype of copy from '" + srcName + "'");
    opChain = opChain == null ? List.of() : List.copyOf(opChain);
    destStride = destStride.clone();
    if (destStride.length != destShape.rank()) {
      throw new IllegalArgumentException(
          "copy from '"
              + srcName
              + "' into '"
              + paramName
              + "': dest_stride "
              + Arrays.toString(destStride)
              + " has rank "
              + destStride.length
              + " but dest_shape "
              + destShape
              + " has rank "
              + destShape.rank());
    }
    if (destOffset < 0) {
      throw new IllegalArgumentException(
          "copy from '"
              + srcName
              + "' into '"
              + paramName
              + "': dest_offset "
              + destOffset
              + " is negative");
    }
  }

  /** A copy of the whole destination, contiguous, at offset 0, with the given chain. */
  public static RecordedCopy contiguous(
      String srcName,
      List<OpSpec> chain,
      String paramName,
      long destOffset,
      Shape destShape,
      DType dtype) {
    return new RecordedCopy(
        srcName, chain, paramName, destOffset, destShape, destShape.rowMajorStrides(), dtype);
  }

  @Override
  public long[] destStride() {
    return destStride.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RecordedCopy c
        && srcName.equals(c.srcName)
        && opChain.equals(c.opChain)
        && paramName.equals(c.paramName)
        && destOffset == c.destOffset
        && destShape.equals(c.destShape)
        && Arrays.equals(destStride, c.destStride)
        && destDtype == c.destDtype;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        srcName, opChain, paramName, destOffset, destShape, Arrays.hashCode(destStride), destDtype);
  }

  @Override
  public String toString() {
    return "RecordedCopy["
        + srcName
        + " "
        + opChain
        + " -> "
        + paramName
        + " @"
        + destOffset
        + " "
        + destShape
        + " stride "
        + Arrays.toString(destStride)
        + " "
        + destDtype
        + "]";
  }
}
