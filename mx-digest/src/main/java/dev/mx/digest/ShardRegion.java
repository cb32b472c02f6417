package dev.mx.digest;

import dev.mx.api.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The box one publisher owns, recovered from a receiver's assembled full tensor (ModelExpress
 * {@code shard_region}): the inverse of what the publisher digested, so {@code
 * digest(shardRegion(full, ...))} equals the publisher's digest of its own contiguous shard.
 *
 * <p>{@code full} holds the whole logical tensor row-major with {@code elementSize} bytes per
 * element. The box is {@code [shardOffset, shardOffset + shape)} per dimension. The three ranks
 * must agree: a short offset would otherwise select a larger region than the publisher digested and
 * report a mismatch on a shard that transferred correctly. A box reaching outside the global shape
 * is an error as well.
 */
public final class ShardRegion {

  private ShardRegion() {}

  /**
   * A contiguous copy of the box in memory the garbage collector frees ({@link Arena#ofAuto()}).
   *
   * @throws IllegalArgumentException on a rank mismatch (naming the three shapes), a box outside
   *     the global shape, or a {@code full} whose size does not match the global shape
   */
  public static MemorySegment shardRegion(
      MemorySegment full, Shape globalShape, long[] shardOffset, Shape shape, int elementSize) {
    return shardRegion(full, globalShape, shardOffset, shape, elementSize, Arena.ofAuto());
  }

  /** A contiguous copy of the box in memory from {@code allocator} (e.g. the caller's arena). */
  public static MemorySegment shardRegion(
      MemorySegment full,
      Shape globalShape,
      long[] shardOffset,
      Shape shape,
      int elementSize,
      SegmentAllocator allocator) {
    Region region = Region.of(full, globalShape, shardOffset, shape, elementSize);
    MemorySegment copy = allocator.allocate(region.byteSize(), 64);
    region.copyInto(copy);
    return copy;
  }

  /**
   * Copies the box into the start of {@code destination}, allocating nothing (for receivers that
   * reuse a staging buffer), and returns the slice written.
   *
   * @throws IllegalArgumentException as {@link #shardRegion(MemorySegment, Shape, long[], Shape,
   *     int)}, or when {@code destination} is smaller than the box
   */
  public static MemorySegment shardRegionInto(
      MemorySegment full,
      Shape globalShape,
      long[] shardOffset,
      Shape shape,
      int elementSize,
      MemorySegment destination) {
    Region region = Region.of(full, globalShape, shardOffset, shape, elementSize);
    if (destination.byteSize() < region.byteSize()) {
      throw new IllegalArgumentException(
          "destination holds "
              + destination.byteSize()
              + " bytes but the shard box at offset "
              + Arrays.toString(shardOffset)
              + " with shape "
              + shape
              + " needs "
              + region.byteSize());
    }
    MemorySegment written = destination.asSlice(0, region.byteSize());
    region.copyInto(written);
    return written;
  }

  /**
   * The digest of the box without materialising it: its contiguous runs are fed in order to a
   * {@link StreamingDigest}. Equal to {@code ShardDigest.digest(shardRegion(...))}.
   */
  public static String digestShardRegion(
      MemorySegment full, Shape globalShape, long[] shardOffset, Shape shape, int elementSize) {
    StreamingDigest digest = new StreamingDigest();
    Region.of(full, globalShape, shardOffset, shape, elementSize).forEachRun(digest::update);
    return digest.digest();
  }

  /**
   * Visits the box as maximal contiguous runs of {@code full}, in row-major order: a run spans the
   * innermost dimension the box does not cover completely, together with every dimension inside it.
   */
  public static void forEachRun(
      MemorySegment full,
      Shape globalShape,
      long[] shardOffset,
      Shape shape,
      int elementSize,
      Consumer<MemorySegment> run) {
    Region.of(full, globalShape, shardOffset, shape, elementSize).forEachRun(run);
  }

  /** A validated box inside a full tensor. */
  private record Region(
      MemorySegment full, long[] global, long[] offset, long[] extent, int elementSize) {

    static Region of(
        MemorySegment full, Shape globalShape, long[] shardOffset, Shape shape, int elementSize) {
      if (globalShape.rank() != shardOffset.length || shape.rank() != shardOffset.length) {
        throw new IllegalArgumentException(
            "rank mismatch: global shape "
                + globalShape
                + ", shard offset "
                + Arrays.toString(shardOffset)
                + " and shape "
                + shape
                + " must have equal rank");
      }
      if (elementSize <= 0) {
        throw new IllegalArgumentException("element size must be positive, got " + elementSize);
      }
      for (int d = 0; d < shardOffset.length; d++) {
        if (shardOffset[d] < 0 || shardOffset[d] > globalShape.dim(d) - shape.dim(d)) {
          throw new IllegalArgumentException(
              "shard box at offset "
                  + Arrays.toString(shardOffset)
                  + " with shape "
                  + shape
                  + " lies outside global shape "
                  + globalShape
                  + " in dim "
                  + d);
        }
      }
      long needed = globalShape.byteSize(elementSize);
      if (full.byteSize() != needed) {
        throw new IllegalArgumentException(
            "full tensor holds "
                + full.byteSize()
                + " bytes but global shape "
                + globalShape
                + " at "
                + elementSize
                + " bytes per element needs "
                + needed);
      }
      return new Region(full, globalShape.dims(), shardOffset.clone(), shape.dims(), elementSize);
    }

    long byteSize() {
      long n = elementSize;
      for (long e : extent) {
        n = Math.multiplyExact(n, e);
      }
      return n;
    }

    void copyInto(MemorySegment destination) {
      long[] at = {0};
      forEachRun(
          run -> {
            MemorySegment.copy(run, 0, destination, at[0], run.byteSize());
            at[0] += run.byteSize();
          });
    }

    void forEachRun(Consumer<MemorySegment> action) {
      int rank = global.length;
      for (long e : extent) {
        if (e == 0) {
          return;
        }
      }
      // Dims [split, rank) form one run; dims [0, split) are walked like an odometer.
      int split = rank - 1;
      long runElements = 1;
      while (split >= 0) {
        runElements *= extent[split];
        if (extent[split] != global[split]) {
          break;
        }
        split--;
      }
      if (split < 0) {
        split = 0;
      }
      long runBytes = runElements * elementSize;
      long[] stride = new long[rank];
      long acc = elementSize;
      for (int d = rank - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= global[d];
      }
      long[] index = new long[split];
      while (true) {
        long start = rank == 0 ? 0 : offset[split] * stride[split];
        for (int d = 0; d < split; d++) {
          start += (offset[d] + index[d]) * stride[d];
        }
        action.accept(full.asSlice(start, runBytes));
        int d = split - 1;
        while (d >= 0 && ++index[d] == extent[d]) {
          index[d] = 0;
          d--;
        }
        if (d < 0) {
          return;
        }
      }
    }
  }
}
