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
import dev.mx.refit.cast.QuantFormat;
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

  @Test
  void fusedMembersAreQuantizedEachOnItsOwnGridWithPartialBlocks() {
    // Two matrices of q (20 rows), k (12) and v (8) of 24 columns at block 16: q has 2 block
    // rows, k and v 1 each (partial), so 4 block rows of 2 per matrix, never one across members.
    Shape shape = Shape.of(2, 40, 24);
    long[] members = {20, 12, 8};
    Map<String, ParamSpec> received = Map.of("qkv", new ParamSpec(shape, DType.BF16));
    Map<String, ParamSpec> engine = new LinkedHashMap<>();
    engine.put("qkv", new ParamSpec(shape, DType.F8_E4M3FN));
    engine.put("qkv_scale_inv", new ParamSpec(Shape.of(2, 4, 2), DType.F32));
    try (Arena arena = Arena.ofConfined();
        LiveWeights live = new LiveWeights(engine)) {
      MemorySegment w = arena.allocate(shape.numel() * 2);
      for (int i = 0; i < shape.numel(); i++) {
        // Each member of its own amplitude, so a block across members would scale them wrongly.
        long row = (i / 24) % 40;
        float amp = row < 20 ? 1f : row < 32 ? 0.01f : 3f;
        w.setAtIndex(I16, i, Casts.f32ToBf16((i % 37 - 18) * 0.03f * amp));
      }
      Fp8BlockInstall install =
          new Fp8BlockInstall(
              live,
              received,
              Map.of("qkv", "qkv_scale_inv"),
              QuantFormat.BLOCK,
              16,
              Fp8Rounding.VLLM,
              Map.of("qkv", members));
      install.install(0, Map.of("qkv", w));
      MemorySegment codes = live.parameter("qkv");
      MemorySegment scales = live.parameter("qkv_scale_inv");
      long row = 0;
      long scaleRow = 0;
      for (int m = 0; m < 2; m++) {
        for (long rows : members) {
          long first = (m * 40 + row) * 24;
          long blockRows = (rows + 15) / 16;
          MemorySegment wantCodes = arena.allocate(rows * 24);
          MemorySegment wantScales = arena.allocate(blockRows * 2 * 4);
          BlockQuantizer.quantize(
              w.asSlice(first * 2, rows * 24 * 2),
              DType.BF16,
              wantCodes,
              wantScales,
              Shape.of(rows, 24),
              QuantFormat.BLOCK,
              16,
              false,
              Fp8Rounding.VLLM);
          assertEquals(
              -1, wantCodes.mismatch(codes.asSlice(first, rows * 24)), "member at row " + row);
          assertEquals(
              -1,
              wantScales.mismatch(scales.asSlice(4 * (m * 4 + scaleRow) * 2, blockRows * 2 * 4)),
              "scales of the member at row " + row);
          row = (row + rows) % 40;
          scaleRow = (scaleRow + blockRows) % 4;
        }
      }
      // k's scale is its own amax (0.54 * 0.01 in bf16) / 448, not q's.
      assertTrue(scales.getAtIndex(ValueLayout.JAVA_FLOAT, 4) < 1e-4f, "k's own block scale");
    }
  }

  @Test
  void membersThatDoNotAddUpToTheRowsAreRefusedNamingTheParameter() {
    try (LiveWeights live = new LiveWeights(ENGINE)) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  new Fp8BlockInstall(
                      live,
                      RECEIVED,
                      Map.of("w", "w_scale_inv"),
                      QuantFormat.BLOCK,
                      16,
                      Fp8Rounding.VLLM,
                      Map.of("w", new long[] {16, 16})));
      assertTrue(
          e.getMessage().contains("'w'") && e.getMessage().contains("[16, 16]"), e.getMessage());
    }
  }
}
