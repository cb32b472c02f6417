package dev.mx.refit.cast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * {@link BlockQuantizer} against a straightforward reference written here from the rule alone (its
 * e4m3fn encoder searches the format's 126 finite magnitudes for the nearest, ties to the even
 * code), and its vector kernel against its scalar loop, byte for byte.
 */
class BlockQuantizerTest {
  private static final ValueLayout.OfFloat F32 =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfShort I16 =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** e4m3fn magnitudes by code 0..126, from the format: bias 7, 3 mantissa bits, no infinity. */
  private static final float[] MAGNITUDES = new float[127];

  static {
    for (int code = 0; code < 127; code++) {
      int exp = code >>> 3;
      int mant = code & 7;
      MAGNITUDES[code] =
          exp == 0 ? mant / 8f / 64f : (float) ((1 + mant / 8.0) * Math.pow(2, exp - 7));
    }
  }

  /** The reference quantization of one matrix stack: codes, then scales, as arrays. */
  private record Reference(byte[] codes, float[] scales, float maxAbs, float maxRel) {}

  private static int referenceCode(float v) {
    if (Float.isNaN(v)) {
      return 0x7f | (Float.floatToRawIntBits(v) >>> 31 << 7);
    }
    float m = Math.min(Math.abs(v), 448f);
    int best = 0;
    for (int code = 1; code < 127; code++) {
      double d = Math.abs((double) MAGNITUDES[code] - m);
      double b = Math.abs((double) MAGNITUDES[best] - m);
      if (d < b || (d == b && (code & 1) == 0)) {
        best = code;
      }
    }
    return best | (Float.floatToRawIntBits(v) >>> 31 << 7);
  }

  private static Reference reference(float[] x, long matrices, int rows, int cols, int block) {
    int br = (rows + block - 1) / block;
    int bc = (cols + block - 1) / block;
    byte[] codes = new byte[x.length];
    float[] scales = new float[(int) matrices * br * bc];
    float maxAbs = 0;
    float maxRel = 0;
    for (int m = 0; m < matrices; m++) {
      for (int i = 0; i < br; i++) {
        for (int j = 0; j < bc; j++) {
          float amax = 0;
          for (int r = i * block; r < Math.min(rows, (i + 1) * block); r++) {
            for (int c = j * block; c < Math.min(cols, (j + 1) * block); c++) {
              amax = Math.max(amax, Math.abs(x[(m * rows + r) * cols + c]));
            }
          }
          amax = Math.max(amax, 1e-4f);
          float scaleInv = amax / 448f;
          scales[(m * br + i) * bc + j] = scaleInv;
          for (int r = i * block; r < Math.min(rows, (i + 1) * block); r++) {
            for (int c = j * block; c < Math.min(cols, (j + 1) * block); c++) {
              int k = (m * rows + r) * cols + c;
              int code = referenceCode(x[k] * (448f / amax));
              codes[k] = (byte) code;
              float value = MAGNITUDES[code & 0x7f] * ((code & 0x80) != 0 ? -1 : 1);
              float err = Math.abs(value * scaleInv - x[k]);
              maxAbs = Math.max(maxAbs, err);
              if (x[k] != 0) {
                maxRel = Math.max(maxRel, err / Math.abs(x[k]));
              }
            }
          }
        }
      }
    }
    return new Reference(codes, scales, maxAbs, maxRel);
  }

  /** Runs the quantizer (scalar or the dispatching entry) on f32 values and checks it. */
  private static void assertMatchesReference(
      float[] x, long matrices, int rows, int cols, int block, boolean scalar) {
    Shape shape = matrices == 1 ? Shape.of(rows, cols) : Shape.of(matrices, rows, cols);
    Reference want = reference(x, matrices, rows, cols, block);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(4L * x.length);
      MemorySegment dst = arena.allocate(x.length);
      MemorySegment scales = arena.allocate(4L * want.scales().length);
      for (int i = 0; i < x.length; i++) {
        src.setAtIndex(F32, i, x[i]);
      }
      QuantizationError e =
          scalar
              ? BlockQuantizer.quantizeScalar(src, DType.F32, dst, scales, shape, block, true)
              : BlockQuantizer.quantize(src, DType.F32, dst, scales, shape, block, true);
      for (int i = 0; i < x.length; i++) {
        byte have = dst.get(ValueLayout.JAVA_BYTE, i);
        if (have != want.codes()[i]) {
          assertEquals(want.codes()[i] & 0xff, have & 0xff, "code of element " + i + " = " + x[i]);
        }
      }
      for (int i = 0; i < want.scales().length; i++) {
        assertEquals(want.scales()[i], scales.getAtIndex(F32, i), "scale_inv of block " + i);
      }
      assertEquals(want.maxAbs(), e.maxAbs(), "max abs error");
      assertEquals(want.maxRel(), e.maxRel(), "max relative error");
    }
  }

  private static float[] normal(int n, long seed, float sigma) {
    SplittableRandom rnd = new SplittableRandom(seed);
    float[] x = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = (float) (rnd.nextGaussian() * sigma);
    }
    return x;
  }

  @Test
  void partialLastBlocksInBothDimensionsAndStackedMatricesMatchTheReference() {
    // 200 x 300 over 128: tiles of 128 or 72 rows by 128 or 44 columns; 3 stacked experts.
    float[] x = normal(3 * 200 * 300, 1, 0.02f);
    assertMatchesReference(x, 3, 200, 300, 128, true);
    assertMatchesReference(x, 3, 200, 300, 128, false);
    assertMatchesReference(x, 1, 600, 300, 64, true);
    assertMatchesReference(x, 1, 600, 300, 64, false);
  }

  @Test
  void aTileBelowTheAmaxFloorIsScaledByTheFloor() {
    float[] x = new float[4 * 4];
    x[5] = 2e-5f; // below 1e-4: scaled by 448 / 1e-4, not by its own magnitude
    x[6] = -1e-5f;
    assertMatchesReference(x, 1, 4, 4, 2, true);
    assertMatchesReference(x, 1, 4, 4, 2, false);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(4 * 16);
      MemorySegment dst = arena.allocate(16);
      MemorySegment scales = arena.allocate(4 * 4);
      BlockQuantizer.quantize(src, DType.F32, dst, scales, Shape.of(4, 4), 2, false);
      for (int i = 0; i < 4; i++) {
        assertEquals(1e-4f / 448f, scales.getAtIndex(F32, i), "an all-zero tile's scale_inv");
      }
      for (int i = 0; i < 16; i++) {
        assertEquals(0, dst.get(ValueLayout.JAVA_BYTE, i), "a zero stays code 0");
      }
    }
  }

  @Test
  void scaledMagnitudesAtOrAbove464SaturateTo448() {
    // Without the clamp 464 would tie to 448 and anything above would round to e4m3fn's NaN.
    assertEquals(0x7e, BlockQuantizer.encode(464f));
    assertEquals(0x7e, BlockQuantizer.encode(465f));
    assertEquals(0xfe, BlockQuantizer.encode(-1e30f) & 0xff);
    assertEquals(0x7e, BlockQuantizer.encode(Float.POSITIVE_INFINITY));
    assertEquals(0x7e, BlockQuantizer.encode(448.00003f));
    assertEquals(0x7f, BlockQuantizer.encode(Float.NaN));
    // Each tile's largest magnitude is scaled to (about) 448: code 0x7e, its sign kept.
    float[] x = normal(256 * 256, 2, 3f);
    assertMatchesReference(x, 1, 256, 256, 128, false);
  }

  @Test
  void tiesRoundToTheEvenCode() {
    // A tile whose amax is 448 is scaled by exactly 1, so these land exactly half-way.
    float[] x = new float[16];
    x[0] = 448f;
    x[1] = 1.0625f; // between 1.0 (0x38) and 1.125 (0x39): even 0x38
    x[2] = 1.1875f; // between 1.125 (0x39) and 1.25 (0x3a): even 0x3a
    x[3] = -13.5f; // between -13 (0xd5) and -14 (0xd6): even 0xd6
    x[4] = 0x1p-10f; // half the smallest subnormal 2^-9: even 0
    x[5] = 0x3p-10f; // between 2^-9 (0x01) and 2^-8 (0x02): even 0x02
    x[6] = 232f; // between 224 (0x76) and 240 (0x77): even 0x76
    int[] want = {0x7e, 0x38, 0x3a, 0xd6, 0x00, 0x02, 0x76};
    try (Arena arena = Arena.ofConfined()) {
      for (boolean scalar : new boolean[] {true, false}) {
        MemorySegment src = arena.allocate(4 * 16);
        MemorySegment dst = arena.allocate(16);
        MemorySegment scales = arena.allocate(4);
        for (int i = 0; i < 16; i++) {
          src.setAtIndex(F32, i, x[i]);
        }
        if (scalar) {
          BlockQuantizer.quantizeScalar(src, DType.F32, dst, scales, Shape.of(1, 16), 16, false);
        } else {
          BlockQuantizer.quantize(src, DType.F32, dst, scales, Shape.of(1, 16), 16, false);
        }
        assertEquals(1f, scales.getAtIndex(F32, 0));
        for (int i = 0; i < want.length; i++) {
          assertEquals(want[i], dst.get(ValueLayout.JAVA_BYTE, i) & 0xff, "element " + x[i]);
          assertEquals(want[i], referenceCode(x[i]), "the reference on " + x[i]);
        }
      }
    }
  }

  /**
   * The first {@code n} values of {@code x} in {@code from} (bf16 rounded to nearest even, or f32).
   */
  private static MemorySegment source(Arena arena, float[] x, long n, DType from) {
    MemorySegment src = arena.allocate(n * from.elementSize());
    for (int i = 0; i < n; i++) {
      if (from == DType.BF16) {
        src.setAtIndex(I16, i, Casts.f32ToBf16(x[i]));
      } else {
        src.setAtIndex(F32, i, x[i]);
      }
    }
    return src;
  }

  @Test
  void theVectorKernelEqualsTheScalarLoopOnBf16AndF32() {
    Throwable cause = Casts.vectorUnavailabilityCause();
    if (cause != null) {
      System.out.println("BlockQuantizerTest: vector kernel unavailable: " + cause);
    }
    Assumptions.assumeTrue(cause == null, () -> "vector kernel unavailable: " + cause);
    int rows = 300;
    int cols = 517; // not a multiple of any vector width: a scalar tail on every row
    float[] x = normal(2 * rows * cols, 3, 0.05f);
    x[17] = Float.NaN; // one tile of NaN
    x[40_000] = 7f; // an outlier tile
    x[41_000] = Float.MIN_VALUE; // f32 subnormal input
    for (DType from : new DType[] {DType.BF16, DType.F32}) {
      for (int block : new int[] {128, 32}) {
        Shape shape = Shape.of(2, rows, cols);
        try (Arena arena = Arena.ofConfined()) {
          MemorySegment src = source(arena, x, x.length, from);
          long nScales = BlockQuantizer.scaleShape(shape, block).numel();
          MemorySegment d1 = arena.allocate(x.length);
          MemorySegment d2 = arena.allocate(x.length);
          MemorySegment s1 = arena.allocate(4 * nScales);
          MemorySegment s2 = arena.allocate(4 * nScales);
          QuantizationError scalar =
              BlockQuantizer.quantizeScalar(src, from, d1, s1, shape, block, true);
          QuantizationError vector =
              VectorBlockQuantizer.quantize(
                  src, from, d2, s2, shape, QuantFormat.BLOCK, block, true, Fp8Rounding.EXACT);
          assertEquals(-1, d1.mismatch(d2), from + " block " + block + ": first differing code");
          assertEquals(-1, s1.mismatch(s2), from + " block " + block + ": first differing scale");
          assertEquals(scalar, vector, from + " block " + block + ": error");
          assertTrue(Float.isNaN(scalar.maxAbs()), "a NaN tile's error is NaN: " + scalar);
        }
      }
    }
  }

  @Test
  void rowTilesOfTheVectorKernelEqualTheScalarLoopOverEveryBinade() {
    Throwable cause = Casts.vectorUnavailabilityCause();
    if (cause != null) {
      System.out.println("BlockQuantizerTest: vector kernel unavailable: " + cause);
    }
    Assumptions.assumeTrue(cause == null, () -> "vector kernel unavailable: " + cause);
    // mxfp8's 1 x 32 tiles, 64 of them per row (more than any vector's lanes), and fp8-channel's
    // rows: each tile's amax in another binade, from f32 subnormals to the largest finite value,
    // and
    // tiles holding zeros, NaN and infinities.
    int rows = 40;
    int cols = 32 * 64;
    float[] x = normal(rows * cols, 11, 1f);
    java.util.Random r = new java.util.Random(5);
    for (int t = 0; t < rows * cols / 32; t++) {
      float amplitude =
          switch (t % 16) {
            case 3 -> 0f;
            case 5 -> Float.MIN_VALUE;
            case 7 -> Float.MAX_VALUE / 4;
            default -> Math.scalb(1f, r.nextInt(270) - 145);
          };
      for (int i = 0; i < 32; i++) {
        x[t * 32 + i] *= amplitude;
        if (t % 16 == 9) {
          // A tile spanning 32 binades below its amax: e4m3fn normals, subnormals, ties and zeros.
          x[t * 32 + i] = Math.scalb(1f + r.nextInt(128) / 128f, r.nextInt(40) - 30 - i / 2);
        }
      }
    }
    x[32 * 9 + 4] = Float.NaN;
    x[32 * 10 + 7] = Float.POSITIVE_INFINITY;
    x[32 * 11 + 1] = Float.NEGATIVE_INFINITY;
    x[32 * 12 + 2] = Float.MAX_VALUE;
    for (QuantFormat format : new QuantFormat[] {QuantFormat.MXFP8, QuantFormat.CHANNEL}) {
      for (DType from : new DType[] {DType.BF16, DType.F32}) {
        Shape shape = Shape.of(rows, cols);
        try (Arena arena = Arena.ofConfined()) {
          MemorySegment src = source(arena, x, x.length, from);
          long nScales =
              BlockQuantizer.scaleShape(shape, format, 128).numel() * format.scaleBytes();
          MemorySegment d1 = arena.allocate(x.length);
          MemorySegment d2 = arena.allocate(x.length);
          MemorySegment s1 = arena.allocate(nScales);
          MemorySegment s2 = arena.allocate(nScales);
          QuantizationError scalar =
              BlockQuantizer.quantizeScalar(
                  src, from, d1, s1, shape, format, 128, true, Fp8Rounding.VLLM);
          QuantizationError vector =
              VectorBlockQuantizer.quantize(
                  src, from, d2, s2, shape, format, 128, true, Fp8Rounding.VLLM);
          String what = format + " from " + from;
          assertEquals(-1, s1.mismatch(s2), what + ": first differing scale byte");
          assertEquals(-1, d1.mismatch(d2), what + ": first differing code");
          assertEquals(scalar, vector, what + ": error");
        }
      }
    }
  }

  @Test
  void anyThreadCountGivesTheOneThreadBytes() {
    int rows = 300; // two whole 128-row blocks and a partial one per matrix
    int cols = 259;
    float[] x = normal(3 * rows * cols, 11, 0.05f);
    Shape shape = Shape.of(3, rows, cols);
    int block = 128;
    long nScales = BlockQuantizer.scaleShape(shape, block).numel();
    // A shared arena: the parts run on the fork-join pool's threads.
    try (Arena arena = Arena.ofShared()) {
      MemorySegment src = source(arena, x, x.length, DType.BF16);
      MemorySegment d1 = arena.allocate(x.length);
      MemorySegment s1 = arena.allocate(4 * nScales);
      QuantizationError one = BlockQuantizer.quantize(src, DType.BF16, d1, s1, shape, block, true);
      for (int threads : new int[] {2, 3, 4, 8, 64}) {
        MemorySegment d = arena.allocate(x.length);
        MemorySegment sc = arena.allocate(4 * nScales);
        QuantizationError many =
            BlockQuantizer.quantize(src, DType.BF16, d, sc, shape, block, true, threads);
        assertEquals(-1, d1.mismatch(d), threads + " threads: first differing code");
        assertEquals(-1, s1.mismatch(sc), threads + " threads: first differing scale");
        assertEquals(one, many, threads + " threads: error");
      }
    }
  }

  @Test
  void perTensorScalesOnSeveralThreadsGiveTheOneThreadBytes() {
    // One or two matrices on more threads: each matrix's tile is cut into row runs.
    int rows = 301;
    int cols = 259; // a scalar tail on every row
    float[] x = normal(2 * rows * cols, 13, 0.05f);
    x[5_000] = 3f; // the amax, in the second run of the first matrix
    x[rows * cols + 7] = Float.NaN; // the second matrix's error and scale are NaN
    try (Arena arena = Arena.ofShared()) {
      for (Shape shape : new Shape[] {Shape.of(rows, cols), Shape.of(2, rows, cols)}) {
        long n = shape.numel();
        long nScales = BlockQuantizer.scaleShape(shape, QuantFormat.TENSOR, 128).numel();
        MemorySegment src = source(arena, x, n, DType.BF16);
        MemorySegment d1 = arena.allocate(n);
        MemorySegment s1 = arena.allocate(4 * nScales);
        QuantizationError one =
            BlockQuantizer.quantizeScalar(
                src, DType.BF16, d1, s1, shape, QuantFormat.TENSOR, 128, true, Fp8Rounding.VLLM);
        for (int threads : new int[] {2, 3, 8}) {
          MemorySegment d = arena.allocate(n);
          MemorySegment sc = arena.allocate(4 * nScales);
          QuantizationError many =
              BlockQuantizer.quantize(
                  src,
                  DType.BF16,
                  d,
                  sc,
                  shape,
                  QuantFormat.TENSOR,
                  128,
                  true,
                  threads,
                  Fp8Rounding.VLLM);
          String what = shape + " on " + threads + " threads";
          assertEquals(-1, s1.mismatch(sc), what + ": first differing scale");
          assertEquals(-1, d1.mismatch(d), what + ": first differing code");
          assertEquals(one, many, what + ": error");
        }
        assertEquals(3f / 448f, s1.getAtIndex(F32, 0), "the first matrix's scale is its amax's");
      }
    }
  }

  @Test
  void scaleShapesRoundUpAndBadShapesAreNamed() {
    assertEquals(Shape.of(2, 3), BlockQuantizer.scaleShape(Shape.of(200, 300), 128));
    assertEquals(Shape.of(8, 1, 1), BlockQuantizer.scaleShape(Shape.of(8, 128, 128), 128));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> BlockQuantizer.scaleShape(Shape.of(64), 128));
    assertTrue(e.getMessage().contains("[64]") || e.getMessage().contains("64"), e.getMessage());
    assertThrows(
        IllegalArgumentException.class, () -> BlockQuantizer.scaleShape(Shape.of(4, 4), 0));
  }
}
