package dev.mx.refit.cast;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The formats beside {@code fp8-block} ({@link QuantFormat}) are bit-exact with PyTorch and numpy
 * computing each format's rule on checked-in vectors ({@code src/test/resources/fp8-formats/
 * generate.py} says how): the generator's per-block amplitudes with a NaN, an infinity and an
 * all-zero row, through the scalar loop, the vector kernel and the threaded path. What each format
 * writes for NaN, infinity and zeros is asserted value by value.
 */
class QuantFormatVectorsTest {
  private static final ValueLayout.OfFloat F32 =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final Shape SHAPE = Shape.of(2, 64, 160);

  private static byte[] resource(String name) throws IOException {
    return TestVectors.read("fp8-formats", name);
  }

  private static int block(QuantFormat format) throws IOException {
    JsonNode meta = new ObjectMapper().readTree(resource("vectors.json"));
    return format.hasBlock() ? meta.get("ue8m0_block").asInt() : 128;
  }

  /** Codes and scales of every kernel path. */
  private static byte[][] run(Arena arena, QuantFormat format, Fp8Rounding rounding, String kernel)
      throws IOException {
    byte[] input = resource("input.bf16.gz");
    MemorySegment src = arena.allocate(input.length, 64);
    MemorySegment.copy(MemorySegment.ofArray(input), 0, src, 0, input.length);
    int block = block(format);
    long nScales = BlockQuantizer.scaleShape(SHAPE, format, block).numel();
    MemorySegment dst = arena.allocate(SHAPE.numel(), 64);
    MemorySegment sc = arena.allocate(nScales * format.scaleDtype().elementSize(), 64);
    switch (kernel) {
      case "scalar" ->
          BlockQuantizer.quantizeScalar(
              src, DType.BF16, dst, sc, SHAPE, format, block, false, rounding);
      case "vector" ->
          VectorBlockQuantizer.quantize(
              src, DType.BF16, dst, sc, SHAPE, format, block, false, rounding);
      default ->
          BlockQuantizer.quantize(
              src, DType.BF16, dst, sc, SHAPE, format, block, false, 2, rounding);
    }
    return new byte[][] {dst.toArray(ValueLayout.JAVA_BYTE), sc.toArray(ValueLayout.JAVA_BYTE)};
  }

  @ParameterizedTest
  @CsvSource({
    "fp8-block-ue8m0, fp8-block-ue8m0, exact",
    "fp8-block-ue8m0, fp8-block-ue8m0, vllm",
    "fp8-block-ue8m0, fp8-block-ue8m0, deepgemm",
    "mxfp8, mxfp8, exact",
    "mxfp8, mxfp8, vllm",
    "mxfp8, mxfp8, deepgemm",
    "fp8-tensor, fp8-tensor.exact, exact",
    "fp8-tensor, fp8-tensor.vllm, vllm",
    "fp8-tensor, fp8-tensor.deepgemm, deepgemm",
    "fp8-channel, fp8-channel.exact, exact",
    "fp8-channel, fp8-channel.vllm, vllm",
    "fp8-channel, fp8-channel.deepgemm, deepgemm"
  })
  void codesAndScalesEqualTheReference(String formatLabel, String variant, String mode)
      throws IOException {
    QuantFormat format = QuantFormat.parse(formatLabel);
    byte[] codes = resource(variant + ".codes.gz");
    byte[] scales = resource(variant + ".scales.gz");
    try (Arena arena = Arena.ofShared()) {
      for (String kernel : new String[] {"scalar", "vector", "threaded"}) {
        byte[][] got = run(arena, format, Fp8Rounding.parse(mode), kernel);
        String what = variant + " " + mode + " " + kernel;
        assertArrayEquals(scales, got[1], what + ": scales");
        int differing = 0;
        int first = -1;
        for (int i = 0; i < codes.length; i++) {
          // A NaN's sign is the hardware's operand order, not part of the format.
          boolean bothNaN = (got[0][i] & 0x7f) == 0x7f && (codes[i] & 0x7f) == 0x7f;
          if (got[0][i] != codes[i] && !bothNaN) {
            differing++;
            first = first < 0 ? i : first;
          }
        }
        assertEquals(0, differing, what + ": codes differ, first at element " + first);
      }
    }
  }

  private static long at(int m, int row, int col) {
    return ((long) m * 64 + row) * 160 + col;
  }

  private static boolean nan(byte code) {
    return (code & 0x7f) == 0x7f;
  }

  @Test
  void nanInfinityAndZerosAreWrittenAsEachFormatStates() throws IOException {
    try (Arena arena = Arena.ofShared()) {
      // mxfp8: the blocks holding the NaN and the infinity have the NaN scale 0xff and NaN codes;
      // the zero row's blocks scale 2^-127 (byte 0) and code 0.
      byte[][] mx = run(arena, QuantFormat.MXFP8, Fp8Rounding.VLLM, "vector");
      long rowScales = 5;
      assertEquals((byte) 0xff, mx[1][(int) ((64 + 5) * rowScales)], "NaN block");
      assertEquals((byte) 0xff, mx[1][(int) ((64 + 40) * rowScales + 3)], "inf block");
      for (int c = 0; c < 32; c++) {
        assertTrue(nan(mx[0][(int) at(1, 5, c)]), "NaN block codes");
        assertTrue(nan(mx[0][(int) at(1, 40, 96 + c)]), "inf block codes");
      }
      for (int c = 0; c < 160; c++) {
        assertEquals(0, mx[0][(int) at(0, 10, c)] & 0x7f, "zero row codes");
      }
      for (int b = 0; b < 5; b++) {
        assertEquals(0, mx[1][(int) (10 * rowScales + b)], "zero row scales: 2^-127");
      }
      // fp8-tensor: matrix 1 holds the NaN: its scale and every code NaN; matrix 0 finite.
      MemorySegment tensor =
          MemorySegment.ofArray(run(arena, QuantFormat.TENSOR, Fp8Rounding.VLLM, "scalar")[1]);
      assertTrue(Float.isNaN(tensor.get(F32, 4)), "matrix 1's scale");
      assertTrue(Float.isFinite(tensor.get(F32, 0)) && tensor.get(F32, 0) > 0, "matrix 0's scale");
      // fp8-channel: the NaN row NaN; the infinity's row scale +inf, its finite codes ±0 and the
      // infinity's NaN; the zero row the floor 1e-4 / 448 and codes 0.
      byte[][] ch = run(arena, QuantFormat.CHANNEL, Fp8Rounding.VLLM, "vector");
      MemorySegment chScales = MemorySegment.ofArray(ch[1]);
      assertTrue(Float.isNaN(chScales.getAtIndex(F32, 64 + 5)), "NaN row scale");
      assertEquals(Float.POSITIVE_INFINITY, chScales.getAtIndex(F32, 64 + 40), "inf row scale");
      assertEquals(1e-4f / 448f, chScales.getAtIndex(F32, 10), "zero row scale");
      for (int c = 0; c < 160; c++) {
        byte code = ch[0][(int) at(1, 40, c)];
        if (c == 100) {
          assertTrue(nan(code), "the infinity's code");
        } else {
          assertEquals(0, code & 0x7f, "finite codes of the inf row at column " + c);
        }
        assertEquals(0, ch[0][(int) at(0, 10, c)] & 0x7f, "zero row codes");
      }
      // fp8-block-ue8m0: the NaN's block scale NaN, the infinity's +inf; others powers of two.
      MemorySegment ue =
          MemorySegment.ofArray(
              run(arena, QuantFormat.BLOCK_UE8M0, Fp8Rounding.VLLM, "threaded")[1]);
      assertTrue(Float.isNaN(ue.getAtIndex(F32, 3)), "NaN block scale");
      assertEquals(Float.POSITIVE_INFINITY, ue.getAtIndex(F32, 3 + 1), "inf block scale");
      for (int i = 0; i < 3; i++) {
        float s = ue.getAtIndex(F32, i);
        assertEquals(0, Float.floatToRawIntBits(s) & 0x7f_ffff, "a power of two: " + s);
      }
    }
  }

  @Test
  void ue8m0RoundsUpAndMxTakesTheFloorExponent() {
    assertEquals(0x1.0p-7f, QuantFormat.ue8m0Ceil(0x1.0p-7f), "a power of two stays");
    assertEquals(0x1.0p-6f, QuantFormat.ue8m0Ceil(0x1.000002p-7f), "just above rounds up");
    assertEquals(0x1.0p-147f, QuantFormat.ue8m0Ceil(0x1.8p-148f), "a subnormal: 1.5 * 2^-148");
    assertEquals(-8, QuantFormat.mxExponent(1f), "floor(log2 1) - 8");
    assertEquals(0, QuantFormat.mxExponent(448f), "448 = 1.75 * 2^8");
    assertEquals(-127, QuantFormat.mxExponent(0f), "zero clamps to -127");
    assertEquals(119, QuantFormat.mxExponent(Float.MAX_VALUE));
    assertEquals(
        Shape.of(3, 40, 2), BlockQuantizer.scaleShape(Shape.of(3, 40, 33), QuantFormat.MXFP8, 128));
    assertEquals(
        Shape.of(3, 1, 1), BlockQuantizer.scaleShape(Shape.of(3, 40, 33), QuantFormat.TENSOR, 128));
    assertEquals(
        Shape.of(3, 40, 1),
        BlockQuantizer.scaleShape(Shape.of(3, 40, 33), QuantFormat.CHANNEL, 128));
  }
}
