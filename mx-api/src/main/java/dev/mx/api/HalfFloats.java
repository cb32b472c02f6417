package dev.mx.api;

/**
 * The one definition of mx's 16-bit float rounding, shared by the weight generator (mx-layout) and
 * the receiver's casts (mx-refit): pure static bit functions, bit-exact with PyTorch's CPU casts.
 * Round to nearest, ties to even; NaN stays NaN (bf16 writes PyTorch 2.x's quiet NaN {@code
 * 0x7fc0}); f16 overflow becomes infinity; subnormals are kept.
 */
public final class HalfFloats {
  /** The quiet NaN PyTorch 2.x writes for any bf16 NaN. */
  public static final short BF16_NAN = 0x7fc0;

  private HalfFloats() {}

  /** {@code v} rounded to bfloat16 (the upper 16 bits of a float), nearest-even. */
  public static short f32ToBf16(float v) {
    return f32BitsToBf16(Float.floatToRawIntBits(v));
  }

  /** The f32 with raw bits {@code bits} rounded to bfloat16, nearest-even. */
  public static short f32BitsToBf16(int bits) {
    if ((bits & 0x7fffffff) > 0x7f800000) {
      return BF16_NAN;
    }
    // Adding 0x7fff plus the kept LSB carries into bit 16 exactly when the dropped half rounds up.
    return (short) ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16);
  }

  /** The float a bfloat16 bit pattern denotes (exact). */
  public static float bf16ToF32(short bits) {
    return Float.intBitsToFloat((bits & 0xffff) << 16);
  }

  /** {@code v} rounded to IEEE binary16, nearest-even (overflow to infinity, subnormals kept). */
  public static short f32ToF16(float v) {
    return Float.floatToFloat16(v);
  }

  /** The float an IEEE binary16 bit pattern denotes (exact). */
  public static float f16ToF32(short bits) {
    return Float.float16ToFloat(bits);
  }
}
