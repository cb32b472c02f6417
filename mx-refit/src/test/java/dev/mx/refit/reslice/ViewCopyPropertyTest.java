package dev.mx.refit.reslice;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.refit.cast.Casts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Random view-to-view copies (ranks 1 to 4, narrowed and permuted sources, strided destinations,
 * same type and casts) against a naive element-by-element gather through {@link Casts#convertBits},
 * run whole and in random run ranges. Sizes are drawn so that rows of equally spaced runs reach the
 * four-stream copy (runs of 256 bytes and more, tails not a multiple of 64) and single long runs
 * split into quarters.
 */
class ViewCopyPropertyTest {
  private static final List<DType> TYPES =
      List.of(DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F64);

  @Test
  void randomViewCopiesMatchANaiveGather() {
    long seed = System.nanoTime();
    SplittableRandom rnd = new SplittableRandom(seed);
    try (Arena arena = Arena.ofConfined()) {
      for (int trial = 0; trial < 300; trial++) {
        String what = "seed " + seed + " trial " + trial;
        trial(arena, rnd, what);
      }
    }
  }

  /**
   * One long contiguous run (split into four quarter streams) and one row of many runs, fixed
   * sizes.
   */
  @Test
  void longRunsAndRowsOfRunsMatchANaiveGather() {
    try (Arena arena = Arena.ofConfined()) {
      SplittableRandom rnd = new SplittableRandom(5);
      // 300,001 f32: a single run of 1.2 MB, not a multiple of four quarters of 64 bytes.
      checkCopy(
          arena,
          rnd,
          DType.F32,
          DType.F32,
          new long[] {300_001},
          new long[] {1},
          0,
          300_001,
          new long[] {1},
          0,
          "single long run");
      // 37 rows, narrow to 333 of 700 bf16 columns (666-byte runs), destination rows padded to 340.
      checkCopy(
          arena,
          rnd,
          DType.BF16,
          DType.BF16,
          new long[] {37, 333},
          new long[] {700, 1},
          5,
          37 * 700,
          new long[] {340, 1},
          3,
          "row of runs");
    }
  }

  private static void trial(Arena arena, SplittableRandom rnd, String what) {
    int rank = 1 + rnd.nextInt(4);
    long[] shape = new long[rank];
    long budget = 1 + rnd.nextInt(1 << 16); // elements
    for (int d = rank - 1; d >= 0; d--) {
      long max =
          Math.max(
              1,
              d == rank - 1
                  ? Math.min(budget, 1 + rnd.nextInt(600))
                  : Math.min(budget, 1 + rnd.nextInt(9)));
      shape[d] = rnd.nextInt(8) == 0 ? 1 : 1 + rnd.nextLong(max);
      budget = Math.max(1, budget / shape[d]);
    }
    // Source: a contiguous tensor of a larger shape, narrowed on every dim, then the dims permuted.
    long[] full = new long[rank];
    long[] start = new long[rank];
    for (int d = 0; d < rank; d++) {
      full[d] = shape[d] + (rnd.nextBoolean() ? 0 : rnd.nextInt(5));
      start[d] = rnd.nextLong(full[d] - shape[d] + 1);
    }
    long[] fullStrides = rowMajor(full);
    int[] perm = permutation(rnd, rank);
    long[] viewShape = new long[rank];
    long[] srcStrides = new long[rank];
    long srcOffset = 0;
    for (int d = 0; d < rank; d++) {
      srcOffset += start[d] * fullStrides[d];
    }
    for (int d = 0; d < rank; d++) {
      viewShape[d] = shape[perm[d]];
      srcStrides[d] = fullStrides[perm[d]];
    }
    long srcElements = full[0] * fullStrides[0];
    // Destination: row-major with random padding per dim.
    long[] padded = new long[rank];
    for (int d = 0; d < rank; d++) {
      padded[d] = viewShape[d] + (rnd.nextInt(3) == 0 ? rnd.nextInt(4) : 0);
    }
    long[] dstStrides = rowMajor(padded);
    long dstOffset = rnd.nextInt(3);
    DType from = TYPES.get(rnd.nextInt(TYPES.size()));
    DType to = rnd.nextBoolean() ? from : TYPES.get(rnd.nextInt(TYPES.size()));
    checkCopy(
        arena,
        rnd,
        from,
        to,
        viewShape,
        srcStrides,
        srcOffset,
        srcElements,
        dstStrides,
        dstOffset,
        what + " " + from + "->" + to + " shape " + java.util.Arrays.toString(viewShape));
  }

  private static void checkCopy(
      Arena arena,
      SplittableRandom rnd,
      DType from,
      DType to,
      long[] shape,
      long[] srcStrides,
      long srcOffset,
      long srcElements,
      long[] dstStrides,
      long dstOffset,
      String what) {
    MemorySegment src = arena.allocate((srcElements * from.elementSize() + 16) & -8, 64);
    for (long b = 0; b + 8 <= src.byteSize(); b += 8) {
      src.set(ValueLayout.JAVA_LONG_UNALIGNED, b, rnd.nextLong());
    }
    AsStrided dstView = new AsStrided(dstOffset, shape, dstStrides);
    long dstElements = dstView.numel() == 0 ? 1 : dstView.maxElement() + 1;
    MemorySegment got = arena.allocate(dstElements * to.elementSize(), 64);
    MemorySegment want = arena.allocate(dstElements * to.elementSize(), 64);
    got.fill((byte) 0x3c);
    want.fill((byte) 0x3c);
    AsStrided srcView = new AsStrided(srcOffset, shape, srcStrides);
    ViewCopy copy = ViewCopy.compile(what, src, from, srcView, got, to, dstView);
    // Whole, or in up to four random run ranges in shuffled order (as batched pieces run).
    long runs = copy.runCount();
    if (rnd.nextBoolean() || runs < 2) {
      copy.run();
    } else {
      long a = rnd.nextLong(runs);
      long b = a + rnd.nextLong(runs - a + 1);
      copy.run(b, runs);
      copy.run(0, a);
      copy.run(a, b);
    }
    gather(src, from, srcView, want, to, dstView);
    long at = got.mismatch(want);
    assertEquals(
        -1L,
        at,
        what + ": first differing byte " + at + " (" + runs + " runs of " + copy.runLength() + ")");
  }

  /** The reference: every element by its multi-index, one scalar conversion each. */
  private static void gather(
      MemorySegment src, DType from, AsStrided sv, MemorySegment dst, DType to, AsStrided dv) {
    long n = sv.numel();
    int rank = sv.rank();
    long[] idx = new long[rank];
    for (long e = 0; e < n; e++) {
      long rem = e;
      for (int d = rank - 1; d >= 0; d--) {
        idx[d] = rem % sv.shape(d);
        rem /= sv.shape(d);
      }
      long si = sv.offset();
      long di = dv.offset();
      for (int d = 0; d < rank; d++) {
        si += idx[d] * sv.stride(d);
        di += idx[d] * dv.stride(d);
      }
      put(dst, di, to, Casts.convertBits(get(src, si, from), from, to));
    }
  }

  private static long get(MemorySegment s, long i, DType t) {
    return switch (t.elementSize()) {
      case 1 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xffL;
      case 2 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffffL;
      case 4 -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) & 0xffff_ffffL;
      default -> s.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
    };
  }

  private static void put(MemorySegment s, long i, DType t, long bits) {
    switch (t.elementSize()) {
      case 1 -> s.set(ValueLayout.JAVA_BYTE, i, (byte) bits);
      case 2 -> s.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) bits);
      case 4 -> s.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, (int) bits);
      default -> s.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, bits);
    }
  }

  private static long[] rowMajor(long[] shape) {
    return new Shape(shape).rowMajorStrides();
  }

  private static int[] permutation(SplittableRandom rnd, int n) {
    int[] p = new int[n];
    for (int i = 0; i < n; i++) {
      p[i] = i;
    }
    if (rnd.nextBoolean()) {
      return p; // half the trials keep the layout order, so inner runs stay contiguous
    }
    for (int i = n - 1; i > 0; i--) {
      int j = rnd.nextInt(i + 1);
      int t = p[i];
      p[i] = p[j];
      p[j] = t;
    }
    return p;
  }
}
