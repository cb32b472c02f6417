package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.cast.BlockQuantizer;
import dev.mx.refit.cast.Casts;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantizationError;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Installing into live weights that hold one parameter FP8 block-quantized. */
class Fp8BlockInstallTest {
  private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;

  private static final Map<String, ParamSpec> RECEIVED = new LinkedHashMap<>();
  private static final Map<String, ParamSpec> ENGINE = new LinkedHashMap<>();

  static {
    RECEIVED.put("w", new ParamSpec(Shape.of(40, 24), DType.BF16));
    RECEIVED.put("norm", new ParamSpec(Shape.of(24), DType.BF16));
    ENGINE.put("w", new ParamSpec(Shape.of(40, 24), DType.F8_E4M3FN));
    ENGINE.put("w_scale_inv", new ParamSpec(Shape.of(3, 2), DType.F32));
    ENGINE.put("norm", new ParamSpec(Shape.of(24), DType.BF16));
  }

  @Test
  void quantizesTheRuledParameterCopiesTheRestAndReportsTheError() {
    try (Arena arena = Arena.ofConfined();
        LiveWeights live = new LiveWeights(ENGINE)) {
      Fp8BlockInstall install =
          new Fp8BlockInstall(live, RECEIVED, Map.of("w", "w_scale_inv"), 16, Fp8Rounding.EXACT);
      MemorySegment w = arena.allocate(40 * 24 * 2);
      MemorySegment norm = arena.allocate(24 * 2);
      for (int i = 0; i < 40 * 24; i++) {
        w.setAtIndex(I16, i, Casts.f32ToBf16((i % 37 - 18) * 0.01f));
      }
      for (int i = 0; i < 24; i++) {
        norm.setAtIndex(I16, i, Casts.f32ToBf16(1 + i));
      }
      install.install(3, Map.of("w", w, "norm", norm));

      MemorySegment codes = arena.allocate(40 * 24);
      MemorySegment scales = arena.allocate(6 * 4);
      QuantizationError want =
          BlockQuantizer.quantize(w, DType.BF16, codes, scales, Shape.of(40, 24), 16, true);
      assertEquals(-1, codes.mismatch(live.parameter("w")), "first differing code");
      assertEquals(-1, scales.mismatch(live.parameter("w_scale_inv")), "first differing scale");
      assertEquals(-1, norm.mismatch(live.parameter("norm")), "norm copied as pulled");
      assertEquals(want, install.lastError());
      assertTrue(want.maxAbs() > 0 && want.maxRel() > 0, want.toString());
      assertEquals(3, live.lastStep());
    }
  }

  @Test
  void aBufferOfTheWrongSizeFailsBeforeAnyParameterIsWritten() {
    try (Arena arena = Arena.ofConfined();
        LiveWeights live = new LiveWeights(ENGINE)) {
      Fp8BlockInstall install =
          new Fp8BlockInstall(live, RECEIVED, Map.of("w", "w_scale_inv"), 16, Fp8Rounding.EXACT);
      MemorySegment w = arena.allocate(40 * 24 * 2).fill((byte) 0x3f);
      MemorySegment shortNorm = arena.allocate(22);
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> install.install(0, Map.of("w", w, "norm", shortNorm)));
      assertTrue(e.getMessage().contains("'norm'"), e.getMessage());
      assertEquals(-1, live.parameter("w").mismatch(arena.allocate(40 * 24)), "w untouched");
      assertEquals(-1, live.parameter("w_scale_inv").mismatch(arena.allocate(24)));
      assertEquals(-1, live.lastStep());
    }
  }
}
