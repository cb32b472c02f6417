package dev.mx.refit.reslice;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.refit.cast.Casts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

class ReslicerTest {

  private static MemorySegment floats(Arena arena, int n, int start) {
    MemorySegment s = arena.allocate(4L * n, 64);
    for (int i = 0; i < n; i++) {
      s.setAtIndex(ValueLayout.JAVA_FLOAT, i, start + i);
    }
    return s;
  }

  private static float[] read(MemorySegment s) {
    return s.toArray(ValueLayout.JAVA_FLOAT);
  }

  @Test
  void narrowOfAFullPullLandsInAStridedDestination() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment staging = floats(arena, 16, 100); // 4x4
      MemorySegment param = arena.allocate(4L * 8);
      AsStrided src = AsStrided.replay(Shape.of(4, 4), List.of(OpSpec.narrow(1, 0, 2)), "w");
      assertEquals(new AsStrided(0, new long[] {4, 2}, new long[] {4, 1}), src);
      ViewCopy c =
          ViewCopy.compile(
              "test",
              staging,
              DType.F32,
              src,
              param,
              DType.F32,
              new AsStrided(0, new long[] {4, 2}, new long[] {2, 1}));
      assertEquals(4, c.runCount());
      assertEquals(2, c.runLength());
      c.run();
      assertArrayEquals(new float[] {100, 101, 104, 105, 108, 109, 112, 113}, read(param));
    }
  }

  @Test
  void transposedSourceAndCoalescedDimsMatchANaiveGather() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment staging = floats(arena, 2 * 3 * 4, 0); // 2x3x4
      // permute(2, 0, 1) -> shape (4, 2, 3), written into a contiguous destination.
      AsStrided src =
          AsStrided.replay(Shape.of(2, 3, 4), List.of(OpSpec.of("permute", 2L, 0L, 1L)), "w");
      MemorySegment dst = arena.allocate(4L * 24);
      ViewCopy.compile(
              "t", staging, DType.F32, src, dst, DType.F32, AsStrided.contiguous(Shape.of(4, 2, 3)))
          .run();
      float[] got = read(dst);
      int k = 0;
      for (int c = 0; c < 4; c++) {
        for (int a = 0; a < 2; a++) {
          for (int b = 0; b < 3; b++) {
            assertEquals(a * 12 + b * 4 + c, got[k++], "at " + c + "," + a + "," + b);
          }
        }
      }
      // A whole contiguous copy coalesces to one run.
      ViewCopy whole =
          ViewCopy.compile(
              "w",
              staging,
              DType.F32,
              AsStrided.contiguous(Shape.of(2, 3, 4)),
              dst,
              DType.F32,
              AsStrided.contiguous(Shape.of(2, 3, 4)));
      assertEquals(1, whole.runCount());
      assertEquals(24, whole.runLength());
    }
  }

  @Test
  void castsWhileReslicing() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment staging = arena.allocate(2L * 8);
      for (int i = 0; i < 8; i++) {
        staging.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Casts.f32ToBf16(i + 0.5f));
      }
      MemorySegment dst = arena.allocate(4L * 4);
      // Column 1 of a 4x2 bf16 source into a contiguous f32 vector.
      AsStrided src =
          AsStrided.replay(Shape.of(4, 2), List.of(OpSpec.of("t"), OpSpec.of("getitem", 1L)), "w");
      ViewCopy.compile(
              "c", staging, DType.BF16, src, dst, DType.F32, AsStrided.contiguous(Shape.of(4)))
          .run();
      assertArrayEquals(new float[] {1.5f, 3.5f, 5.5f, 7.5f}, read(dst));
    }
  }

  @Test
  void compileRejectsShapeMismatchAndViewsOutsideTheBuffer() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(64);
      IllegalArgumentException shape =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  ViewCopy.compile(
                      "copy X",
                      a,
                      DType.F32,
                      AsStrided.contiguous(Shape.of(4)),
                      a,
                      DType.F32,
                      AsStrided.contiguous(Shape.of(2, 2))));
      assertTrue(shape.getMessage().startsWith("copy X"), shape.getMessage());
      IllegalArgumentException outside =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  ViewCopy.compile(
                      "copy Y",
                      a,
                      DType.F32,
                      AsStrided.contiguous(Shape.of(4)),
                      a,
                      DType.F32,
                      new AsStrided(14, new long[] {4}, new long[] {1})));
      assertTrue(outside.getMessage().contains("destination"), outside.getMessage());
    }
  }

  @Test
  void spanTestSeparatesDisjointFromOverlappingDestinations() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = floats(arena, 16, 0);
      MemorySegment param = arena.allocate(4L * 16);
      ViewCopy left = copyInto(src, param, 0, new long[] {2, 4}, new long[] {4, 1});
      ViewCopy right = copyInto(src, param, 8, new long[] {2, 4}, new long[] {4, 1});
      assertTrue(Reslicer.destinationsDisjoint(List.of(left, right)));
      // Interleaved columns are disjoint element-wise but their spans overlap: conservative answer.
      ViewCopy col0 = copyInto(src, param, 0, new long[] {4}, new long[] {4});
      ViewCopy col1 = copyInto(src, param, 1, new long[] {4}, new long[] {4});
      assertFalse(Reslicer.destinationsDisjoint(List.of(col0, col1)));
      // Empty views never overlap anything.
      ViewCopy empty = copyInto(src, param, 0, new long[] {0, 4}, new long[] {4, 1});
      assertTrue(Reslicer.destinationsDisjoint(List.of(left, empty, right)));
    }
  }

  private static ViewCopy copyInto(
      MemorySegment src, MemorySegment dst, long offset, long[] shape, long[] strides) {
    return ViewCopy.compile(
        "c",
        src,
        DType.F32,
        new AsStrided(0, shape, rowMajor(shape)),
        dst,
        DType.F32,
        new AsStrided(offset, shape, strides));
  }

  private static long[] rowMajor(long[] shape) {
    return Shape.of(shape).rowMajorStrides();
  }

  @Test
  void overlappingCopiesRunInCapturedOrderSoTheLastWins() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment first = floats(arena, 4, 1);
      MemorySegment second = floats(arena, 4, 10);
      MemorySegment dst = arena.allocate(4L * 4);
      List<ViewCopy> copies =
          List.of(
              ViewCopy.compile(
                  "a",
                  first,
                  DType.F32,
                  AsStrided.contiguous(Shape.of(4)),
                  dst,
                  DType.F32,
                  AsStrided.contiguous(Shape.of(4))),
              ViewCopy.compile(
                  "b",
                  second,
                  DType.F32,
                  AsStrided.contiguous(Shape.of(2)),
                  dst,
                  DType.F32,
                  new AsStrided(1, new long[] {2}, new long[] {1})));
      assertFalse(Reslicer.destinationsDisjoint(copies));
      Reslicer.runSequential(copies);
      assertArrayEquals(new float[] {1, 10, 11, 4}, read(dst));
    }
  }

  @Test
  void batchedParallelRunEqualsSequential() {
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try (Arena arena = Arena.ofShared()) {
      int rows = 1024;
      int cols = 1024; // 4 MiB of f32: large enough to be split into pieces
      MemorySegment src = floats(arena, rows * cols, 0);
      MemorySegment a = arena.allocate(4L * rows * cols / 2);
      MemorySegment b = arena.allocate(4L * rows * cols / 2);
      List<ViewCopy> copies = new ArrayList<>();
      for (int half = 0; half < 2; half++) {
        long start = half == 0 ? 0 : cols / 2;
        AsStrided view = new AsStrided(start, new long[] {rows, cols / 2}, new long[] {cols, 1});
        copies.add(
            ViewCopy.compile(
                "half",
                src,
                DType.F32,
                view,
                half == 0 ? a : b,
                DType.F32,
                AsStrided.contiguous(Shape.of(rows, cols / 2))));
      }
      assertTrue(Reslicer.destinationsDisjoint(copies));
      Reslicer.runBatched(copies, pool, 3);
      float[] ga = read(a);
      float[] gb = read(b);
      for (int r = 0; r < rows; r += 97) {
        for (int c = 0; c < cols / 2; c += 13) {
          assertEquals(r * cols + c, ga[r * cols / 2 + c]);
          assertEquals(r * cols + cols / 2 + c, gb[r * cols / 2 + c]);
        }
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
