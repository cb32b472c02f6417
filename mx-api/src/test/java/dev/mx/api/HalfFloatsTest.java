package dev.mx.api;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * Hand-checked edges of the shared 16-bit rounding (PyTorch's golden rows run in mx-layout and
 * mx-refit).
 */
class HalfFloatsTest {

  @Test
  void bf16RoundsToNearestEvenAndWritesOneQuietNaN() {
    assertEquals((short) 0x3f80, HalfFloats.f32BitsToBf16(0x3f80_8000)); // tie, even stays
    assertEquals((short) 0x3f82, HalfFloats.f32BitsToBf16(0x3f81_8000)); // tie, odd rounds up
    assertEquals((short) 0x3f81, HalfFloats.f32BitsToBf16(0x3f80_8001)); // past the tie
    assertEquals(
        (short) 0x7f80, HalfFloats.f32BitsToBf16(0x7f7f_ffff)); // f32 max rounds to infinity
    assertEquals((short) 0x0001, HalfFloats.f32BitsToBf16(0x0000_8001)); // subnormals kept
    assertEquals(HalfFloats.BF16_NAN, HalfFloats.f32BitsToBf16(0xffa0_0001)); // any NaN
    assertEquals((short) 0xff80, HalfFloats.f32ToBf16(Float.NEGATIVE_INFINITY));
    assertEquals(-2.5f, HalfFloats.bf16ToF32((short) 0xc020));
  }

  @Test
  void f16RoundsToNearestEvenKeepsSubnormalsAndOverflowsToInfinity() {
    assertEquals((short) 0x7bff, HalfFloats.f32ToF16(65519f));
    assertEquals(
        (short) 0x7c00, HalfFloats.f32ToF16(65520f)); // halfway past max, odd: up to infinity
    assertEquals((short) 0x0001, HalfFloats.f32ToF16(0x1.0p-24f));
    assertEquals((short) 0x0000, HalfFloats.f32ToF16(0x1.0p-25f)); // tie to even zero
    assertEquals((short) 0x3c00, HalfFloats.f32ToF16(1.0f + 0x1.0p-11f)); // tie, even stays
    assertEquals(0x1.0p-24f, HalfFloats.f16ToF32((short) 0x0001));
    assertEquals(Float.NEGATIVE_INFINITY, HalfFloats.f16ToF32((short) 0xfc00));
  }
}
