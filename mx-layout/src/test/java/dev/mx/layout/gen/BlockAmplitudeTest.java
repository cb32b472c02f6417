package dev.mx.layout.gen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The generator's per-block amplitude: known bf16 values computed by numpy (mx-refit's {@code
 * src/test/resources/fp8-amplitude/generate.py}), zero and subnormal tiles where the rule puts
 * them, boxes that agree with the whole tensor, and the default fill unchanged.
 */
class BlockAmplitudeTest {
  private static final String NAME = "model.layers.3.self_attn.o_proj.weight";
  private static final Shape SHAPE = Shape.of(1, 160, 224);
  private static final BlockAmplitude AMP = new BlockAmplitude(32);

  private static MemorySegment fill(Arena arena, long[] at, Shape box, BlockAmplitude amp) {
    MemorySegment s = arena.allocate(box.numel() * 2);
    WeightGenerator.fill(List.of(new BoxFill(s, DType.BF16, NAME, SHAPE, at, box)), n -> 0, 2, amp);
    return s;
  }

  @Test
  void bf16ValuesEqualNumpysAndZeroAndSubnormalTilesAreWhereTheRulePutsThem() {
    try (Arena arena = Arena.ofShared()) {
      MemorySegment s = fill(arena, new long[3], SHAPE, AMP);
      long[][] known = {
        {0, 0xbb03},
        {1, 0x3a7d},
        {100, 0x8000},
        {225, 0x39a6},
        {7169, 0x8039},
        {7170, 0x20},
        {8970, 0x8},
        {35839, 0x3a8f}
      };
      for (long[] k : known) {
        assertEquals(k[1], FloatBits.bitsAt(s, k[0], DType.BF16), "element " + k[0]);
        assertEquals(
            k[1],
            FloatBits.storedBits(WeightGenerator.value(NAME, 0, k[0], SHAPE, AMP), DType.BF16),
            "value() of element " + k[0]);
      }
      // Tile 3 (row tile 0, column tile 3) is zero, tile 7 (row tile 1, column tile 0) subnormal.
      for (long r = 0; r < 32; r++) {
        for (long c = 96; c < 128; c++) {
          assertEquals(0, FloatBits.bitsAt(s, r * 224 + c, DType.BF16) & 0x7fff, "zero tile");
        }
        for (long c = 0; c < 32; c++) {
          long bits = FloatBits.bitsAt(s, (32 + r) * 224 + c, DType.BF16) & 0x7fff;
          assertTrue(bits < 0x80, "subnormal tile: 0x" + Long.toHexString(bits));
        }
      }
      assertEquals(0f, AMP.at(NAME, SHAPE, 100));
      assertEquals(0x1.0p-126f, AMP.at(NAME, SHAPE, 7169));
    }
  }

  @Test
  void aBoxHoldsTheWholeTensorsValuesAndNoAmplitudeIsTheDefaultFill() {
    try (Arena arena = Arena.ofShared()) {
      MemorySegment whole = fill(arena, new long[3], SHAPE, AMP);
      MemorySegment box = fill(arena, new long[] {0, 40, 100}, Shape.of(1, 50, 60), AMP);
      for (long r = 0; r < 50; r++) {
        for (long c = 0; c < 60; c++) {
          assertEquals(
              FloatBits.bitsAt(whole, (40 + r) * 224 + 100 + c, DType.BF16),
              FloatBits.bitsAt(box, r * 60 + c, DType.BF16));
        }
      }
      MemorySegment plain = arena.allocate(SHAPE.numel() * 2);
      WeightGenerator.fill(new BoxFill(plain, DType.BF16, NAME, SHAPE, new long[3], SHAPE), 0);
      assertEquals(-1, plain.mismatch(fill(arena, new long[3], SHAPE, null)));
    }
  }

  @Test
  void aTileMustBePositive() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new BlockAmplitude(0));
    assertTrue(e.getMessage().contains("got 0"), e.getMessage());
  }
}
