package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** {@link ShardRegion} recovers exactly the box a publisher digested. */
class ShardRegionTest {

  @Test
  void everyShardOfRandomlyShardedTensorsDigestsLikeItsOwnBuffer() {
    Random random = new Random(13);
    int shardsChecked = 0;
    try (Arena arena = Arena.ofConfined()) {
      for (int tensor = 0; tensor < 40; tensor++) {
        int rank = 1 + random.nextInt(4);
        int elementSize = new int[] {1, 2, 4, 8}[random.nextInt(4)];
        long[] global = new long[rank];
        for (int d = 0; d < rank; d++) {
          global[d] = 1 + random.nextInt(rank == 1 ? 20000 : rank == 2 ? 160 : 24);
        }
        Shape globalShape = new Shape(global);
        MemorySegment full =
            TestBytes.randomNative(arena, globalShape.byteSize(elementSize), tensor);
        List<long[]> cuts = new ArrayList<>();
        for (int d = 0; d < rank; d++) {
          cuts.add(randomCuts(random, global[d]));
        }
        for (long[][] box : grid(cuts)) {
          long[] offset = box[0];
          Shape shape = new Shape(box[1]);
          byte[] own = ownBuffer(full, global, offset, box[1], elementSize);
          String expected = ShardDigest.digest(MemorySegment.ofArray(own));
          MemorySegment copy =
              ShardRegion.shardRegion(full, globalShape, offset, shape, elementSize);
          String where =
              "global "
                  + globalShape
                  + " offset "
                  + java.util.Arrays.toString(offset)
                  + " shape "
                  + shape
                  + " element size "
                  + elementSize;
          assertArrayEquals(own, copy.toArray(ValueLayout.JAVA_BYTE), where);
          assertEquals(expected, ShardDigest.digest(copy), where);
          assertEquals(
              expected,
              ShardRegion.digestShardRegion(full, globalShape, offset, shape, elementSize),
              where + " (zero-copy)");
          MemorySegment staging = arena.allocate(own.length + 16L);
          MemorySegment written =
              ShardRegion.shardRegionInto(full, globalShape, offset, shape, elementSize, staging);
          assertEquals(own.length, written.byteSize());
          assertEquals(expected, ShardDigest.digest(written), where + " (into staging)");
          shardsChecked++;
        }
      }
    }
    assertTrue(shardsChecked > 200, "only " + shardsChecked + " shards");
  }

  @Test
  void runsAreMaximal() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment full = arena.allocate(4 * 6 * 8 * 2);
      Shape global = Shape.of(4, 6, 8);
      List<Long> runs = new ArrayList<>();
      ShardRegion.forEachRun(
          full,
          global,
          new long[] {1, 2, 0},
          Shape.of(2, 3, 8),
          2,
          run -> runs.add(run.byteSize()));
      assertEquals(List.of(48L, 48L), runs, "inner dims covered: one run per outer index");
      runs.clear();
      ShardRegion.forEachRun(
          full, global, new long[] {0, 0, 0}, global, 2, run -> runs.add(run.byteSize()));
      assertEquals(List.of(4L * 6 * 8 * 2), runs, "the whole tensor is one run");
      runs.clear();
      ShardRegion.forEachRun(
          full,
          global,
          new long[] {0, 0, 3},
          Shape.of(4, 6, 0),
          2,
          run -> runs.add(run.byteSize()));
      assertEquals(List.of(), runs, "an empty box has no runs");
      assertEquals(
          ShardDigest.digest(MemorySegment.NULL),
          ShardRegion.digestShardRegion(full, global, new long[] {0, 0, 3}, Shape.of(4, 6, 0), 2));
    }
  }

  @Test
  void aScalarTensorIsItsOwnRegion() {
    MemorySegment full = MemorySegment.ofArray(new byte[] {1, 2, 3, 4});
    MemorySegment copy =
        ShardRegion.shardRegion(full, Shape.of(new long[0]), new long[0], Shape.of(new long[0]), 4);
    assertArrayEquals(new byte[] {1, 2, 3, 4}, copy.toArray(ValueLayout.JAVA_BYTE));
  }

  @Test
  void ranksMustAgreeAndTheErrorNamesTheThreeShapes() {
    MemorySegment full = MemorySegment.ofArray(new byte[4 * 8 * 4]);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ShardRegion.shardRegion(full, Shape.of(4, 8), new long[] {2}, Shape.of(2, 8), 4));
    assertTrue(e.getMessage().contains("rank mismatch"), e.getMessage());
    assertTrue(
        e.getMessage().contains("[4, 8]")
            && e.getMessage().contains("[2]")
            && e.getMessage().contains("[2, 8]"),
        e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () ->
            ShardRegion.digestShardRegion(
                full, Shape.of(4, 8), new long[] {0, 0}, Shape.of(4, 8, 1), 4));
  }

  @Test
  void aBoxOutsideTheGlobalShapeIsAnError() {
    MemorySegment full = MemorySegment.ofArray(new byte[4 * 8 * 4]);
    Shape global = Shape.of(4, 8);
    for (long[][] bad :
        new long[][][] {{{3, 0}, {2, 8}}, {{0, 1}, {4, 8}}, {{-1, 0}, {1, 8}}, {{0, 0}, {5, 1}}}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> ShardRegion.shardRegion(full, global, bad[0], new Shape(bad[1]), 4));
      assertTrue(e.getMessage().contains("outside global shape [4, 8]"), e.getMessage());
    }
  }

  @Test
  void sizesAreChecked() {
    MemorySegment full = MemorySegment.ofArray(new byte[4 * 8 * 4]);
    IllegalArgumentException wrongFull =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ShardRegion.shardRegion(
                    full, Shape.of(4, 8), new long[] {0, 0}, Shape.of(2, 2), 2));
    assertTrue(
        wrongFull.getMessage().contains("full tensor holds 128 bytes"), wrongFull.getMessage());
    IllegalArgumentException small =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ShardRegion.shardRegionInto(
                    full,
                    Shape.of(4, 8),
                    new long[] {0, 0},
                    Shape.of(2, 2),
                    4,
                    MemorySegment.ofArray(new byte[15])));
    assertTrue(small.getMessage().contains("needs 16"), small.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> ShardRegion.shardRegion(full, Shape.of(4, 8), new long[] {0, 0}, Shape.of(2, 2), 0));
  }

  /** The shard's bytes gathered element by element from global row-major indices. */
  private static byte[] ownBuffer(
      MemorySegment full, long[] global, long[] offset, long[] extent, int size) {
    int rank = global.length;
    long count = 1;
    for (long e : extent) {
      count *= e;
    }
    byte[] out = new byte[(int) (count * size)];
    long[] local = new long[rank];
    for (long i = 0; i < count; i++) {
      long rest = i;
      for (int d = rank - 1; d >= 0; d--) {
        local[d] = rest % extent[d];
        rest /= extent[d];
      }
      long flat = 0;
      for (int d = 0; d < rank; d++) {
        flat = flat * global[d] + offset[d] + local[d];
      }
      MemorySegment.copy(full, ValueLayout.JAVA_BYTE, flat * size, out, (int) (i * size), size);
    }
    return out;
  }

  /** Sorted cut points 0 = c0 < c1 < ... < ck = extent splitting one dimension into 1..4 parts. */
  private static long[] randomCuts(Random random, long extent) {
    TreeSet<Long> cuts = new TreeSet<>(List.of(0L, extent));
    int parts = 1 + random.nextInt(4);
    for (int i = 1; i < parts && extent > 1; i++) {
      cuts.add(1 + (long) random.nextInt((int) extent - 1));
    }
    return cuts.stream().mapToLong(Long::longValue).toArray();
  }

  /** Every box of the grid the cut points define, as {offset, shape}. */
  private static List<long[][]> grid(List<long[]> cuts) {
    List<long[][]> boxes = new ArrayList<>();
    boxes.add(new long[][] {new long[0], new long[0]});
    for (long[] dimCuts : cuts) {
      List<long[][]> next = new ArrayList<>();
      for (long[][] box : boxes) {
        for (int i = 1; i < dimCuts.length; i++) {
          long[] offset = java.util.Arrays.copyOf(box[0], box[0].length + 1);
          long[] shape = java.util.Arrays.copyOf(box[1], box[1].length + 1);
          offset[offset.length - 1] = dimCuts[i - 1];
          shape[shape.length - 1] = dimCuts[i] - dimCuts[i - 1];
          next.add(new long[][] {offset, shape});
        }
      }
      boxes = next;
    }
    return boxes;
  }
}
