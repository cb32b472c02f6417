package dev.mx.layout.trainer;

import dev.mx.api.Box;
import dev.mx.api.Shape;
import java.util.Arrays;
import java.util.Objects;

/**
 * A box of a global (Hugging Face–named) tensor that lies, contiguous and row-major, inside a
 * trainer rank's local buffer: {@code shape.numel()} elements starting at element {@code
 * elementOffset} of buffer {@code bufferName} hold the global box {@code [shardOffset, shardOffset
 * + shape)} of {@code hfName}.
 *
 * @param published whether this rank owns the shard (the lowest rank that holds the box); the
 *     replicas other ranks hold (a replicated norm on TP rank 1, dense weights on EP rank 1, every
 *     tensor on DP rank 1) are not owned, yet their ranks publish them too, for receivers to spread
 *     their reads over (ModelExpress's table needs no flag: a later offer of a box is a replica)
 */
public record AliasShard(
    String hfName,
    Shape globalShape,
    long[] shardOffset,
    Shape shape,
    String bufferName,
    long elementOffset,
    boolean published) {

  public AliasShard {
    Objects.requireNonNull(hfName, "hfName");
    Objects.requireNonNull(globalShape, "globalShape of " + hfName);
    Objects.requireNonNull(shape, "shape of " + hfName);
    Objects.requireNonNull(bufferName, "bufferName of " + hfName);
    shardOffset = shardOffset.clone();
    if (!Box.whole(globalShape).contains(Box.at(shardOffset, shape))) {
      throw new IllegalArgumentException(
          "alias of '"
              + hfName
              + "' in buffer '"
              + bufferName
              + "': box at "
              + Arrays.toString(shardOffset)
              + " shape "
              + shape
              + " is outside the global shape "
              + globalShape);
    }
    if (elementOffset < 0) {
      throw new IllegalArgumentException(
          "alias of '"
              + hfName
              + "' in buffer '"
              + bufferName
              + "': negative element offset "
              + elementOffset);
    }
  }

  @Override
  public long[] shardOffset() {
    return shardOffset.clone();
  }

  /** The global box this alias holds. */
  public Box box() {
    return Box.at(shardOffset, shape);
  }

  public long numel() {
    return shape.numel();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof AliasShard a
        && hfName.equals(a.hfName)
        && globalShape.equals(a.globalShape)
        && Arrays.equals(shardOffset, a.shardOffset)
        && shape.equals(a.shape)
        && bufferName.equals(a.bufferName)
        && elementOffset == a.elementOffset
        && published == a.published;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        hfName,
        globalShape,
        Arrays.hashCode(shardOffset),
        shape,
        bufferName,
        elementOffset,
        published);
  }

  @Override
  public String toString() {
    return "AliasShard["
        + hfName
        + " "
        + box()
        + " of "
        + globalShape
        + " <- "
        + bufferName
        + "@"
        + elementOffset
        + (published ? "" : " (replica)")
        + "]";
  }
}
