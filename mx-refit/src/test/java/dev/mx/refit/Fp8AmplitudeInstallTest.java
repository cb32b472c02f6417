package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.gen.BlockAmplitude;
import dev.mx.layout.gen.BoxFill;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.TestVectors;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A quantizing install of generator data with per-block amplitudes ({@link BlockAmplitude}: many
 * binades, zero and subnormal blocks, partial edge blocks) equals PyTorch's bytes in every rounding
 * mode. numpy recomputed the data independently and PyTorch quantized it ({@code
 * src/test/resources/fp8-amplitude/generate.py} says how): the input, the codes of every mode and
 * the scales are compared, the vllm codes element by element.
 */
class Fp8AmplitudeInstallTest {

  private static byte[] resource(String name) throws IOException {
    return TestVectors.read("fp8-amplitude", name);
  }

  private static String sha256(MemorySegment s) throws NoSuchAlgorithmException {
    return HexFormat.of()
        .formatHex(MessageDigest.getInstance("SHA-256").digest(s.toArray(ValueLayout.JAVA_BYTE)));
  }

  @ParameterizedTest
  @CsvSource({
    "down128, vllm",
    "down128, exact",
    "down128, deepgemm",
    "many32, vllm",
    "many32, exact",
    "many32, deepgemm"
  })
  void installedCodesAndScalesEqualPyTorchs(String vectorCase, String mode) throws Exception {
    JsonNode meta = new ObjectMapper().readTree(resource("vectors.json")).get(vectorCase);
    String name = meta.get("tensor").asText();
    Shape shape = TestVectors.shape(meta.get("shape"));
    int block = meta.get("block").asInt();
    Fp8Rounding rounding = Fp8Rounding.parse(mode);
    String scaleName = name + "_scale_inv";
    Map<String, ParamSpec> received = Map.of(name, new ParamSpec(shape, DType.BF16));
    Map<String, ParamSpec> engine = new LinkedHashMap<>();
    engine.put(name, new ParamSpec(shape, DType.F8_E4M3FN));
    Shape scaleShape =
        Shape.of(
            shape.dim(0), (shape.dim(1) + block - 1) / block, (shape.dim(2) + block - 1) / block);
    engine.put(scaleName, new ParamSpec(scaleShape, DType.F32));
    try (Arena arena = Arena.ofShared();
        LiveWeights live = new LiveWeights(engine)) {
      MemorySegment pulled = arena.allocate(shape.numel() * 2);
      WeightGenerator.fill(
          List.of(new BoxFill(pulled, DType.BF16, name, shape, new long[3], shape)),
          n -> meta.get("step").asLong(),
          2,
          new BlockAmplitude(block));
      assertEquals(meta.get("input_sha256").asText(), sha256(pulled), "generated input");

      Fp8BlockInstall install =
          new Fp8BlockInstall(live, received, Map.of(name, scaleName), block, rounding);
      install.install(0, Map.of(name, pulled));

      MemorySegment codes = live.parameter(name);
      if (rounding == Fp8Rounding.VLLM) {
        byte[] want = resource(vectorCase + ".vllm.codes.gz");
        long at = MemorySegment.ofArray(want).mismatch(codes);
        assertEquals(-1, at, "first differing code of " + name);
      }
      assertEquals(meta.get(mode + "_codes_sha256").asText(), sha256(codes), mode + " codes");
      assertEquals(
          -1,
          MemorySegment.ofArray(resource(vectorCase + ".scales.gz"))
              .mismatch(live.parameter(scaleName)),
          "first differing scale byte");
      assertTrue(meta.get("zero_elements").asLong() > 0, "the data holds zeros");
      assertTrue(meta.get("subnormal_elements").asLong() > 0, "the data holds subnormals");
    }
  }
}
