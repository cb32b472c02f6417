package dev.mx.refit.publish;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * One shard a publisher serves: the box {@code [shardOffset, shardOffset + shape)} of global tensor
 * {@code name}, held contiguously and row-major in {@code bytes}. {@code bytes} is either a whole
 * registered buffer (a plain tensor) or a slice of one (an alias, e.g. the q rows of a fused
 * Megatron QKV buffer). A {@code replica} is a box another rank owns: listed without tile digests.
 */
record PublishedRegion(
    String name,
    DType dtype,
    Shape globalShape,
    long[] shardOffset,
    Shape shape,
    MemorySegment bytes,
    boolean replica) {

  PublishedRegion {
    shardOffset = shardOffset.clone();
  }

  /** Checks the geometry against the global tensor and the byte count against the dtype. */
  void validate() {
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("a published tensor needs a non-empty name");
    }
    if (shardOffset.length != globalShape.rank() || shape.rank() != globalShape.rank()) {
      throw new IllegalArgumentException(
          "tensor '"
              + name
              + "': shard_offset "
              + Arrays.toString(shardOffset)
              + " and shape "
              + shape
              + " must have the rank of the global shape "
              + globalShape);
    }
    for (int d = 0; d < shardOffset.length; d++) {
      if (shardOffset[d] < 0
          || shardOffset[d] > globalShape.dim(d)
          || shape.dim(d) > globalShape.dim(d) - shardOffset[d]) {
        throw new IllegalArgumentException(
            "tensor '"
                + name
                + "': the box at "
                + Arrays.toString(shardOffset)
                + " of shape "
                + shape
                + " leaves the global shape "
                + globalShape
                + " in dim "
                + d);
      }
    }
    long expected = shape.byteSize(dtype.elementSize());
    if (bytes.byteSize() != expected) {
      throw new IllegalArgumentException(
          "tensor '"
              + name
              + "': "
              + bytes.byteSize()
              + " bytes given for a "
              + dtype
              + " shard of shape "
              + shape
              + " ("
              + expected
              + " bytes, contiguous row-major)");
    }
    if (!bytes.isNative()) {
      throw new IllegalArgumentException(
          "tensor '" + name + "': published memory must be native (off-heap)");
    }
  }

  /** This shard as a replica of another rank's box. */
  PublishedRegion asReplica() {
    return new PublishedRegion(name, dtype, globalShape, shardOffset, shape, bytes, true);
  }

  /** The same geometry key replica merging uses: name and box. */
  String boxKey() {
    return name + " @ " + Arrays.toString(shardOffset) + " " + shape;
  }
}
