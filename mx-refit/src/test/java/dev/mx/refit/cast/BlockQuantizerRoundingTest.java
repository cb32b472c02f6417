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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Each {@link Fp8Rounding} mode is bit-exact with PyTorch computing that mode's formula, on vectors
 * PyTorch produced ({@code src/test/resources/fp8-rounding/generate.py} says how): codes and
 * scales, through the scalar loop, the vector kernel and the threaded path. The inputs hold values
 * whose codes depend on the mode, a zero block, bf16 subnormals, an infinity and a NaN (a NaN's
 * sign is not compared).
 */
class BlockQuantizerRoundingTest {

  private static byte[] resource(String name) throws IOException {
    return TestVectors.read("fp8-rounding", name);
  }

  private static JsonNode vectors() throws IOException {
    return new ObjectMapper().readTree(resource("vectors.json"));
  }

  @ParameterizedTest
  @CsvSource({
    "vllm128, exact",
    "vllm128, vllm",
    "vllm128, deepgemm",
    "many32, exact",
    "many32, vllm",
    "many32, deepgemm"
  })
  void codesAndScalesEqualPyTorchs(String vectorCase, String mode) throws IOException {
    JsonNode meta = vectors().get(vectorCase);
    Shape shape = TestVectors.shape(meta.get("shape"));
    int block = meta.get("block").asInt();
    Fp8Rounding rounding = Fp8Rounding.parse(mode);
    byte[] input = resource(vectorCase + ".input.bf16.gz");
    byte[] codes = resource(vectorCase + "." + mode + ".codes.gz");
    byte[] scales = resource(vectorCase + "." + mode + ".scales.gz");
    assertEquals(shape.numel() * 2, input.length);
    assertEquals(shape.numel(), codes.length);
    assertEquals(BlockQuantizer.scaleShape(shape, block).numel() * 4, scales.length);

    try (Arena arena = Arena.ofShared()) {
      MemorySegment src = arena.allocate(input.length, 64);
      MemorySegment.copy(MemorySegment.ofArray(input), 0, src, 0, input.length);
      for (String kernel : new String[] {"scalar", "vector", "threaded"}) {
        MemorySegment dst = arena.allocate(codes.length, 64);
        MemorySegment sc = arena.allocate(scales.length, 64);
        switch (kernel) {
          case "scalar" ->
              BlockQuantizer.quantizeScalar(
                  src, DType.BF16, dst, sc, shape, QuantFormat.BLOCK, block, false, rounding);
          case "vector" ->
              VectorBlockQuantizer.quantize(
                  src, DType.BF16, dst, sc, shape, QuantFormat.BLOCK, block, false, rounding);
          default ->
              BlockQuantizer.quantize(
                  src, DType.BF16, dst, sc, shape, QuantFormat.BLOCK, block, false, 2, rounding);
        }
        String what = vectorCase + " " + mode + " " + kernel;
        assertArrayEquals(scales, sc.toArray(ValueLayout.JAVA_BYTE), what + ": scales");
        byte[] got = dst.toArray(ValueLayout.JAVA_BYTE);
        int differing = 0;
        int first = -1;
        for (int i = 0; i < got.length; i++) {
          // Both NaN codes (0x7f, 0xff) are NaN: which sign a NaN times NaN keeps is the
          // hardware's operand order, in PyTorch as in Java, not part of the format.
          boolean bothNaN = (got[i] & 0x7f) == 0x7f && (codes[i] & 0x7f) == 0x7f;
          if (got[i] != codes[i] && !bothNaN) {
            differing++;
            first = first < 0 ? i : first;
          }
        }
        assertEquals(
            0, differing, what + ": codes differ from PyTorch's, first at element " + first);
      }
    }
  }

  /** The vectors tell the modes apart: a quantizer ignoring the mode would fail above. */
  @ParameterizedTest
  @CsvSource({"vllm", "deepgemm"})
  void theModesDifferOnTheVectors(String mode) throws IOException {
    int differing =
        vectors().get("many32").get("modes").get(mode).get("codes_differing_from_exact").asInt();
    assertTrue(differing > 100, mode + ": " + differing + " codes differ from exact");
    byte[] exact = resource("many32.exact.codes.gz");
    byte[] other = resource("many32." + mode + ".codes.gz");
    int counted = 0;
    for (int i = 0; i < exact.length; i++) {
      counted += exact[i] != other[i] ? 1 : 0;
    }
    assertEquals(differing, counted);
  }
}
