package dev.mx.layout.gen;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Objects;

/**
 * "Fill {@code target} with the box {@code [boxOffset, boxOffset + boxShape)} of global tensor
 * {@code tensorName} (shape {@code globalShape}), stored row-major in {@code dtype}". The target
 * must hold exactly the box's elements; it usually aliases part of a larger buffer.
 */
public record BoxFill(
    MemorySegment target,
    DType dtype,
    String tensorName,
    Shape globalShape,
    long[] boxOffset,
    Shape boxShape) {

  public BoxFill {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(dtype, "dtype");
    Objects.requireNonNull(tensorName, "tensorName");
    boxOffset = boxOffset.clone();
    if (!Box.whole(globalShape).contains(Box.at(boxOffset, boxShape))) {
      throw new IllegalArgumentException(
          "fill of '"
              + tensorName
              + "': box at "
              + Arrays.toString(boxOffset)
              + " shape "
              + boxShape
              + " is not inside the global shape "
              + globalShape);
    }
    long need = boxShape.byteSize(dtype.elementSize());
    if (target.byteSize() != need) {
      throw new IllegalArgumentException(
          "fill of '"
              + tensorName
              + "': target holds "
              + target.byteSize()
              + " bytes but the box "
              + boxShape
              + " of "
              + dtype
              + " needs "
              + need);
    }
    FloatBits.storedBits(0f, dtype); // rejects dtypes the generator cannot store
  }

  @Override
  public long[] boxOffset() {
    return boxOffset.clone();
  }
}
