package dev.mx.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.refit.cast.Casts;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Device casts and view copies equal the CPU casts bit for bit (GPU only; skips with the cause
 * elsewhere).
 */
class CudaCastsTest {
  private static final List<DType> TYPES =
      List.of(DType.F32, DType.BF16, DType.F16, DType.F8_E4M3FN, DType.F8_E5M2);

  @BeforeEach
  void needsCuda() {
    CudaTestSupport.assumeCuda();
  }

  /**
   * The PyTorch cast vectors (a copy of the project's shared golden/casts.tsv, on the test class
   * path).
   */
  static List<String> castVectors() throws IOException {
    try (InputStream in = CudaCastsTest.class.getResourceAsStream("/golden/casts.tsv")) {
      if (in == null) {
        throw new IOException("golden/casts.tsv is missing from the test class path");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
    }
  }

  private static long bits(byte[] b, int i, int size) {
    long v = 0;
    for (int k = size - 1; k >= 0; k--) {
      v = (v << 8) | (b[i * size + k] & 0xFF);
    }
    return v;
  }

  /** Converts on the device: contiguous, source and destination at odd byte offsets. */
  private static byte[] deviceConvert(byte[] in, DType from, DType to, int count) {
    try (DeviceAllocation src = DeviceBuffers.upload(in, 1);
        DeviceAllocation dst = DeviceAllocation.allocate(0, (long) count * to.elementSize() + 64)) {
      CudaCasts.convert(
          0,
          src.segment().address() + 1,
          from.elementSize(),
          from,
          dst.segment().address() + 3,
          to.elementSize(),
          to,
          count);
      return DeviceBuffers.download(dst, 3, (long) count * to.elementSize());
    }
  }

  @Test
  void everyCastsTsvRowBetweenDeviceTypes() throws IOException {
    int rows = 0;
    for (String line : castVectors()) {
      if (line.startsWith("#") || line.isBlank()) {
        continue;
      }
      String[] f = line.split("\t");
      DType from = DType.parse(f[0]);
      DType to = DType.parse(f[1]);
      if (!CudaCasts.supports(from, to)) {
        continue; // f64 rows: the device does not convert f64
      }
      long input = Long.parseUnsignedLong(f[2], 16);
      long expected = Long.parseUnsignedLong(f[3], 16);
      byte[] in = new byte[from.elementSize()];
      for (int k = 0; k < in.length; k++) {
        in[k] = (byte) (input >>> (8 * k));
      }
      long out = bits(deviceConvert(in, from, to, 1), 0, to.elementSize());
      if (isNaN(input, from)) {
        assertTrue(isNaN(out, to), line + ": NaN stays NaN, got 0x" + Long.toHexString(out));
      } else {
        assertEquals(expected, out, line);
      }
      rows++;
    }
    assertTrue(rows >= 150, "compared " + rows + " rows");
  }

  private static boolean isNaN(long bits, DType t) {
    return switch (t) {
      case F32 -> Float.isNaN(Float.intBitsToFloat((int) bits));
      case BF16 -> Float.isNaN(Casts.bf16ToF32((short) bits));
      case F16 -> Float.isNaN(Casts.f16ToF32((short) bits));
      default -> Float.isNaN(Casts.fp8(t).toFloat((int) bits));
    };
  }

  @Test
  void randomDataInEveryPairEqualsTheCpuCast() {
    int count = 100_003;
    long seed = 11;
    for (DType from : TYPES) {
      for (DType to : TYPES) {
        byte[] in = DeviceBuffers.random(count * from.elementSize(), seed++);
        byte[] expected = new byte[count * to.elementSize()];
        Casts.convert(
            MemorySegment.ofArray(in), 0, from, MemorySegment.ofArray(expected), 0, to, count);
        assertArrayEquals(expected, deviceConvert(in, from, to, count), from + " -> " + to);
      }
    }
  }

  @Test
  void stridedViewCopiesWithCastsEqualTheCpu() {
    // src f32 [4, 6, 10] contiguous; copy its permute(2, 0, 1) view into a contiguous bf16 [10, 4,
    // 6].
    checkView(
        DType.F32,
        DType.BF16,
        new long[] {10, 4, 6},
        new long[] {1, 60, 10},
        new long[] {24, 6, 1},
        240,
        240);
    // A narrow along the last dim of f16 [8, 16] into an f32 [8, 5] with padded rows (row stride
    // 7).
    checkView(
        DType.F16, DType.F32, new long[] {8, 5}, new long[] {16, 1}, new long[] {7, 1}, 128, 56);
    // Five dims (the kernel takes four: one launch per outermost index), same type.
    checkView(
        DType.BF16,
        DType.BF16,
        new long[] {2, 3, 2, 3, 4},
        new long[] {1, 2, 6, 12, 36},
        new long[] {72, 24, 12, 4, 1},
        144,
        144);
    // fp8 out of a transposed f32 matrix.
    checkView(
        DType.F32,
        DType.F8_E4M3FN,
        new long[] {33, 17},
        new long[] {1, 33},
        new long[] {17, 1},
        561,
        561);
  }

  private static void checkView(
      DType from,
      DType to,
      long[] shape,
      long[] srcStrides,
      long[] dstStrides,
      int srcElements,
      int dstElements) {
    byte[] in =
        DeviceBuffers.random(srcElements * from.elementSize(), shape.length * 31L + srcElements);
    byte[] expected = new byte[dstElements * to.elementSize()];
    MemorySegment inSeg = MemorySegment.ofArray(in);
    MemorySegment outSeg = MemorySegment.ofArray(expected);
    long total = 1;
    for (long s : shape) {
      total *= s;
    }
    long[] idx = new long[shape.length];
    for (long e = 0; e < total; e++) {
      long rem = e;
      long so = 0;
      long dof = 0;
      for (int d = shape.length - 1; d >= 0; d--) {
        idx[d] = rem % shape[d];
        rem /= shape[d];
        so += idx[d] * srcStrides[d];
        dof += idx[d] * dstStrides[d];
      }
      Casts.convert(inSeg, so * from.elementSize(), from, outSeg, dof * to.elementSize(), to, 1);
    }
    try (DeviceAllocation src = DeviceBuffers.upload(in, 0);
        DeviceAllocation dst = DeviceBuffers.upload(new byte[expected.length], 0)) {
      CudaCasts.viewCopy(
          0,
          src.segment().address(),
          from,
          srcStrides,
          dst.segment().address(),
          to,
          dstStrides,
          shape);
      assertArrayEquals(
          expected,
          DeviceBuffers.download(dst, 0, expected.length),
          from + " -> " + to + " view " + java.util.Arrays.toString(shape));
    }
  }
}
