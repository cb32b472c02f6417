package dev.mx.layout.gen;

import dev.mx.api.DType;
import dev.mx.api.HalfFloats;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Conversions between {@code float} and the 16-bit float formats, bit-exact with PyTorch's CPU
 * casts: round to nearest, ties to even; NaN stays NaN; f16 overflow becomes infinity; subnormals
 * are kept. The rounding itself is {@link HalfFloats} in mx-api, which the receiver's casts use
 * too; this class adds the generator's dtype-level views of it ("the stored value").
 */
public final class FloatBits {
  /** The quiet NaN PyTorch 2.x writes for any bf16 NaN. */
  public static final short BF16_NAN = HalfFloats.BF16_NAN;

  private FloatBits() {}

  /** {@code v} rounded to bfloat16 (the upper 16 bits of a float), nearest-even. */
  public static short f32ToBf16(float v) {
    return HalfFloats.f32ToBf16(v);
  }

  /** {@code v} rounded to IEEE binary16, nearest-even (overflow to infinity, subnormals kept). */
  public static short f32ToF16(float v) {
    return HalfFloats.f32ToF16(v);
  }

  /** The float a bfloat16 bit pattern denotes (exact). */
  public static float bf16ToF32(short bits) {
    return HalfFloats.bf16ToF32(bits);
  }

  /** The float an IEEE binary16 bit pattern denotes (exact). */
  public static float f16ToF32(short bits) {
    return HalfFloats.f16ToF32(bits);
  }

  /**
   * The bits {@code v} is stored as in {@code dtype}, zero-extended to a long: f32 bits, bf16 or
   * f16 bits (nearest-even), or the f64 bits of {@code (double) v}.
   *
   * @throws IllegalArgumentException for a dtype that is not f32, bf16, f16 or f64
   */
  public static long storedBits(float v, DType dtype) {
    return switch (dtype) {
      case F32 -> Float.floatToRawIntBits(v) & 0xffffffffL;
      case BF16 -> f32ToBf16(v) & 0xffffL;
      case F16 -> f32ToF16(v) & 0xffffL;
      case F64 -> Double.doubleToRawLongBits(v);
      default ->
          throw new IllegalArgumentException(
              "dtype " + dtype + " cannot store generated weights; use f32, bf16, f16 or f64");
    };
  }

  /**
   * The value stored bits denote, widened to double (inverse of {@link #storedBits} up to
   * rounding).
   */
  public static double valueOf(long bits, DType dtype) {
    return switch (dtype) {
      case F32 -> Float.intBitsToFloat((int) bits);
      case BF16 -> bf16ToF32((short) bits);
      case F16 -> f16ToF32((short) bits);
      case F64 -> Double.longBitsToDouble(bits);
      default ->
          throw new IllegalArgumentException("dtype " + dtype + " is not a generated-weight dtype");
    };
  }

  /**
   * The raw bits of element {@code index} of a {@code dtype} array in native memory, zero-extended.
   */
  public static long bitsAt(MemorySegment seg, long index, DType dtype) {
    return switch (dtype.elementSize()) {
      case 1 -> seg.get(ValueLayout.JAVA_BYTE, index) & 0xffL;
      case 2 -> seg.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, index) & 0xffffL;
      case 4 -> seg.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, index) & 0xffffffffL;
      case 8 -> seg.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index);
      default -> throw new IllegalArgumentException("no element size " + dtype.elementSize());
    };
  }

  /** Writes the low {@code dtype.elementSize()} bytes of {@code bits} as element {@code index}. */
  public static void setBits(MemorySegment seg, long index, DType dtype, long bits) {
    switch (dtype.elementSize()) {
      case 1 -> seg.set(ValueLayout.JAVA_BYTE, index, (byte) bits);
      case 2 -> seg.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, index, (short) bits);
      case 4 -> seg.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, index, (int) bits);
      case 8 -> seg.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, index, bits);
      default -> throw new IllegalArgumentException("no element size " + dtype.elementSize());
    }
  }
}
