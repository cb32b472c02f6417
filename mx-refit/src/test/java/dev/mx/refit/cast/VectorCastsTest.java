package dev.mx.refit.cast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Vector API cast kernel against the scalar kernel (itself checked against PyTorch in {@link
 * CastsTest}), bit for bit: every bf16, f16 and fp8 input to every other type, and millions of f32
 * bit patterns, random and built to hit NaN payloads, infinities, subnormals, ties and the overflow
 * thresholds of each target.
 */
class VectorCastsTest {
  private static final int BLOCK = 4096;
  private static final List<DType> TYPES =
      List.of(DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F8_E5M2);

  @BeforeAll
  static void vectorKernelInUse() {
    // This module's surefire configuration resolves jdk.incubator.vector; only a machine without
    // 256-bit
    // vectors may lack the kernel, and then the scalar path is all there is to test.
    Throwable cause = Casts.vectorUnavailabilityCause();
    if (cause != null) {
      System.out.println("VectorCastsTest: vector cast kernel unavailable: " + cause);
      if (Boolean.getBoolean("mx.test.requireNative")) {
        fail("vector cast kernel unavailable", cause);
      }
    }
    org.junit.jupiter.api.Assumptions.assumeTrue(
        cause == null, () -> "vector cast kernel unavailable: " + cause);
    assertTrue(Casts.vectorized());
  }

  @Test
  void everySixteenBitInputMatchesTheScalarKernel() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(2L << 16);
      for (int i = 0; i < 1 << 16; i++) {
        src.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) i);
      }
      for (DType from : List.of(DType.BF16, DType.F16)) {
        assertSameAsScalar(arena, src, from, 1 << 16, "all 65,536 inputs");
      }
    }
  }

  @Test
  void everyFp8InputMatchesTheScalarKernel() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(256);
      for (int i = 0; i < 256; i++) {
        src.set(ValueLayout.JAVA_BYTE, i, (byte) i);
      }
      for (DType from : List.of(DType.F8_E4M3FN, DType.F8_E5M2)) {
        assertSameAsScalar(arena, src, from, 256, "all 256 inputs");
      }
    }
  }

  @Test
  void randomAndEdgeF32BitPatternsMatchTheScalarKernel() {
    long seed = System.nanoTime();
    SplittableRandom rnd = new SplittableRandom(seed);
    int n = 1 << 21;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(4L * n);
      // Half uniformly random bits (every exponent, every NaN payload), half built near rounding
      // edges.
      for (int i = 0; i < n; i++) {
        src.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, i % 2 == 0 ? rnd.nextInt() : edge(rnd));
      }
      assertSameAsScalar(arena, src, DType.F32, n, "random f32 bits, seed " + seed);
    }
  }

  /** Fixed patterns every run sees: ties at each target's rounding bit, thresholds, specials. */
  @Test
  void namedF32EdgesMatchTheScalarKernel() {
    int[] edges = {
      0x0000_0000,
      0x8000_0000,
      0x7f80_0000,
      0xff80_0000,
      0x7fc0_0000,
      0xffc0_0000,
      0x7f80_0001,
      0x7fa0_0000,
      0x7f80_2000,
      0x7fff_ffff,
      0x0000_0001,
      0x007f_ffff,
      0x0080_0000, // f32 subnormals, min normal
      0x3f80_8000,
      0x3f81_8000,
      0x3f80_8001,
      0x3f80_7fff, // bf16 ties (even down, odd up), just past, just below
      0x3f80_1000,
      0x3f80_3000,
      0x477f_f000,
      0x477f_efff,
      0x477f_e000,
      0x3880_0000,
      0x387f_ffff,
      0x3300_0000,
      0x3300_0001,
      0x32ff_ffff,
      0x3380_0000, // f16: ties, 65520 (overflow), min normal, half min subnormal
      0x43e8_0000,
      0x43e8_0001,
      0x43e0_0000,
      0x43f0_0000,
      0x3c80_0000,
      0x3c7f_ffff,
      0x3a80_0000,
      0x3a80_0001,
      0x3b40_0000, // e4m3fn: 464 (tie to 448), 448, 480, min normal, half min subnormal, 1.5 min
      // subnormal
      0x4770_0000,
      0x476f_ffff,
      0x4760_0000,
      0x3780_0000,
      0x3780_0001,
      0x3840_0000, // e5m2 thresholds
    };
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(8L * edges.length);
      for (int i = 0; i < edges.length; i++) {
        src.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, 2 * i, edges[i]);
        src.setAtIndex(
            ValueLayout.JAVA_INT_UNALIGNED, 2 * i + 1, edges[i] ^ 0x8000_0000); // the other sign
      }
      assertSameAsScalar(arena, src, DType.F32, 2 * edges.length, "named edges");
    }
  }

  /**
   * Runs of every length 0..3 vectors at odd offsets: the vector body plus the scalar tail, through
   * Casts.
   */
  @Test
  void oddLengthsAndOffsetsMatchTheScalarKernel() {
    SplittableRandom rnd = new SplittableRandom(11);
    try (Arena arena = Arena.ofConfined()) {
      int max = 3 * VectorCasts.LANES + 1;
      MemorySegment src = arena.allocate(4L * max + 8);
      for (long b = 0; b < src.byteSize(); b++) {
        src.set(ValueLayout.JAVA_BYTE, b, (byte) rnd.nextInt());
      }
      MemorySegment got = arena.allocate(4L * max + 8);
      MemorySegment want = arena.allocate(4L * max + 8);
      for (DType from : TYPES) {
        for (DType to : TYPES) {
          for (int count = 0; count <= max; count++) {
            long so = 1 + count % 3;
            long d0 = 3 - count % 3;
            got.fill((byte) 0x5a);
            want.fill((byte) 0x5a);
            Casts.convert(src, so, from, got, d0, to, count);
            Casts.convertRunScalar(
                src, so, from.elementSize(), from, want, d0, to.elementSize(), to, count);
            assertEquals(
                -1L,
                got.mismatch(want),
                from + " -> " + to + ", " + count + " element(s) at byte " + so);
          }
        }
      }
    }
  }

  /**
   * f32 bits near where some target rounds: a random exponent around the targets' ranges, tie-ish
   * low bits.
   */
  private static int edge(SplittableRandom rnd) {
    int sign = rnd.nextBoolean() ? 0x8000_0000 : 0;
    int exp =
        switch (rnd.nextInt(4)) {
          case 0 -> rnd.nextInt(256); // anything, NaN and infinity included
          case 1 -> 127 - 30 + rnd.nextInt(50); // the f16 / fp8 ranges, subnormals to overflow
          case 2 -> rnd.nextBoolean() ? 0 : 255; // f32 subnormal or NaN / infinity
          default -> 127 + 14 + rnd.nextInt(3); // around the f16 and e5m2 overflow
        };
    int mant = rnd.nextInt() & 0x7f_ffff;
    // Put an exact tie (a 1 followed by zeros) at a rounding position of one of the targets,
    // sometimes.
    int pos =
        switch (rnd.nextInt(6)) {
          case 0 -> 15; // bf16
          case 1 -> 12 + rnd.nextInt(12); // f16 normal and subnormal
          case 2 -> 19 + rnd.nextInt(4); // e4m3fn / e5m2 normal
          case 3 -> rnd.nextInt(23); // anywhere
          default -> -1;
        };
    if (pos >= 0) {
      mant = (mant & ~((2 << pos) - 1)) | (1 << pos);
      if (rnd.nextInt(4) == 0) {
        mant += rnd.nextBoolean() ? 1 : -1; // just past or just short of the tie
        mant &= 0x7f_ffff;
      }
    }
    return sign | (exp << 23) | mant;
  }

  /**
   * Converts {@code n} elements of {@code from} to every other type both ways and compares the
   * bytes.
   */
  private static void assertSameAsScalar(
      Arena arena, MemorySegment src, DType from, int n, String what) {
    for (DType to : TYPES) {
      if (to == from) {
        continue;
      }
      MemorySegment vec = arena.allocate((long) n * to.elementSize());
      MemorySegment ref = arena.allocate((long) n * to.elementSize());
      // In blocks, as re-slice runs arrive: many calls get the loops compiled sooner than one long
      // call.
      long done = 0;
      for (long at = 0; at < n; at += BLOCK) {
        long count = Math.min(BLOCK, n - at);
        long did =
            VectorCasts.convert(
                src, at * from.elementSize(), from, vec, at * to.elementSize(), to, count);
        done += did;
        if (did < count) {
          break;
        }
      }
      assertEquals(n - n % VectorCasts.LANES, done, "vector elements of " + n);
      Casts.convertRunScalar(src, 0, from.elementSize(), from, ref, 0, to.elementSize(), to, n);
      if (done < n) {
        // The tail is the caller's: compare the vector part only.
        MemorySegment.copy(
            ref,
            done * to.elementSize(),
            vec,
            done * to.elementSize(),
            (n - done) * to.elementSize());
      }
      long at = vec.mismatch(ref);
      if (at >= 0) {
        long i = at / to.elementSize();
        long in = bits(src, i, from);
        fail(
            from
                + " -> "
                + to
                + " ("
                + what
                + "): element "
                + i
                + " input 0x"
                + Long.toHexString(in)
                + " vector 0x"
                + Long.toHexString(bits(vec, i, to))
                + " scalar 0x"
                + Long.toHexString(bits(ref, i, to)));
      }
    }
  }

  private static long bits(MemorySegment s, long i, DType t) {
    return switch (t.elementSize()) {
      case 1 -> s.get(ValueLayout.JAVA_BYTE, i) & 0xffL;
      case 2 -> s.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffffL;
      default -> s.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i) & 0xffff_ffffL;
    };
  }
}
