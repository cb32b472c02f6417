package dev.mx.refit.cast;

import dev.mx.api.annotation.Internal;

/**
 * A small binary floating-point format (sign, {@code expBits} exponent bits, {@code mantBits}
 * mantissa bits) encoded from and decoded to f32 with round to nearest even. Describes the two OCP
 * fp8 formats: {@code e4m3fn} (no infinity; the all-ones code is NaN; anything that rounds past the
 * largest finite value becomes NaN) and {@code e5m2} (IEEE-like: overflow rounds to infinity).
 */
@Internal
public final class MiniFloat {
  /** OCP FP8 E4M3 "fn": bias 7, max finite 448, NaN = S.1111.111, no infinity. */
  public static final MiniFloat E4M3FN = new MiniFloat("f8_e4m3fn", 4, 3, false);

  /** OCP FP8 E5M2: bias 15, max finite 57344, infinity = S.11111.00, NaN = S.11111.xx (xx != 0). */
  public static final MiniFloat E5M2 = new MiniFloat("f8_e5m2", 5, 2, true);

  private final String name;
  private final int mantBits;
  private final int bias;
  private final boolean hasInfinity;

  /** Largest finite code without sign. */
  private final int maxFinite;

  /** Code (without sign) written for NaN. */
  private final int nanCode;

  /** Code (without sign) written on overflow: infinity, or NaN when the format has none. */
  private final int overflowCode;

  private final float[] decode = new float[256];
  private final int[] decodeBits = new int[256];

  /**
   * Codes by the top 16 bits of an f32 whose low 16 bits are zero / not zero (they only act as
   * sticky bits).
   */
  private final byte[] encodeExact = new byte[1 << 16];

  private final byte[] encodeSticky = new byte[1 << 16];

  private MiniFloat(String name, int expBits, int mantBits, boolean hasInfinity) {
    this.name = name;
    this.mantBits = mantBits;
    this.bias = (1 << (expBits - 1)) - 1;
    this.hasInfinity = hasInfinity;
    int allOnesExp = ((1 << expBits) - 1) << mantBits;
    if (hasInfinity) {
      maxFinite = allOnesExp - 1;
      nanCode = allOnesExp | ((1 << mantBits) - 1);
      overflowCode = allOnesExp;
    } else {
      nanCode = allOnesExp | ((1 << mantBits) - 1);
      maxFinite = nanCode - 1;
      overflowCode = nanCode;
    }
    for (int code = 0; code < 256; code++) {
      decode[code] = decodeSlow(code);
      decodeBits[code] = Float.floatToRawIntBits(decode[code]);
    }
    // Rounding to at most 3 mantissa bits never looks at the low 16 bits of an f32 except as "any
    // set?":
    // the half-way bit sits at bit 16 or above. So two 64K tables give the exact code of any f32.
    for (int high = 0; high < (1 << 16); high++) {
      encodeExact[high] = (byte) encodeSlow(Float.intBitsToFloat(high << 16));
      encodeSticky[high] = (byte) encodeSlow(Float.intBitsToFloat((high << 16) | 1));
    }
  }

  /** The f32 bits of an 8-bit code. */
  public int toFloatBits(int code) {
    return decodeBits[code & 0xFF];
  }

  /** The code of the f32 with these bits (table lookup; equal to {@link #fromFloat}). */
  public byte fromFloatBits(int bits) {
    int high = bits >>> 16;
    return (bits & 0xFFFF) == 0 ? encodeExact[high] : encodeSticky[high];
  }

  public String name() {
    return name;
  }

  /** The f32 value of an 8-bit code (exact; fp8 values are all representable in f32). */
  public float toFloat(int code) {
    return decode[code & 0xFF];
  }

  private float decodeSlow(int code) {
    boolean negative = (code & 0x80) != 0;
    int magnitude = code & 0x7F;
    int exp = magnitude >>> mantBits;
    int mant = magnitude & ((1 << mantBits) - 1);
    float v;
    if (magnitude == nanCode || (hasInfinity && magnitude > overflowCode)) {
      v = Float.NaN;
    } else if (hasInfinity && magnitude == overflowCode) {
      v = Float.POSITIVE_INFINITY;
    } else if (exp == 0) {
      v = Math.scalb((float) mant, 1 - bias - mantBits);
    } else {
      v = Math.scalb((float) ((1 << mantBits) | mant), exp - bias - mantBits);
    }
    return negative ? -v : v;
  }

  /**
   * The code of {@code value}, rounded to nearest even; NaN keeps its sign bit (as PyTorch does).
   */
  public int fromFloat(float value) {
    return fromFloatBits(Float.floatToRawIntBits(value)) & 0xFF;
  }

  /** The reference encoder the tables are built from (integer round to nearest even). */
  int encodeSlow(float value) {
    int bits = Float.floatToRawIntBits(value);
    int sign = (bits >>> 24) & 0x80;
    int abs = bits & 0x7FFF_FFFF;
    if (abs > 0x7F80_0000) {
      return sign | nanCode;
    }
    if (abs == 0x7F80_0000) {
      return sign | overflowCode;
    }
    if (abs == 0) {
      return sign;
    }
    int f32Exp = abs >>> 23;
    // Significand with its implicit bit, and the unbiased exponent of its lowest bit's scale.
    int significand = f32Exp == 0 ? abs : (abs & 0x7F_FFFF) | 0x80_0000;
    int exp = f32Exp == 0 ? -126 : f32Exp - 127;
    int minNormalExp = 1 - bias;
    // Bits of the f32 significand to drop: the mantissa difference, plus the denormalization shift.
    int shift = 23 - mantBits + Math.max(0, minNormalExp - exp);
    int code;
    if (shift >= 26) {
      code = 0; // below half the smallest subnormal
    } else {
      int kept = significand >>> shift;
      int rest = significand & ((1 << shift) - 1);
      int half = 1 << (shift - 1);
      if (rest > half || (rest == half && (kept & 1) != 0)) {
        kept++;
      }
      // Normal numbers: the implicit bit sits in the exponent field's lowest bit, so adding the
      // biased
      // exponent (minus one) carries a mantissa overflow into the exponent for free.
      code = exp >= minNormalExp ? ((exp + bias - 1) << mantBits) + kept : kept;
    }
    if (code > maxFinite) {
      return sign | overflowCode;
    }
    return sign | code;
  }

  @Override
  public String toString() {
    return name;
  }
}
