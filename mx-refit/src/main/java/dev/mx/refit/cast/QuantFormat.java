package dev.mx.refit.cast;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Internal;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Locale;

/**
 * The FP8 (e4m3fn) weight formats a quantizing install writes: how a matrix is cut into tiles that
 * share a scale, and how each tile's scale and factor follow from its {@code amax} (the largest
 * {@code |x|} over the tile, widened to f32). Every format encodes {@code e4m3fn(clamp(RN(x ·
 * factor), ±448))}, round to nearest even; the engine dequantizes {@code code · scale}.
 *
 * <ul>
 *   <li>{@link #BLOCK} {@code fp8-block}: {@code block × block} tiles; f32 {@code scale_inv =
 *       amax/448}, {@code amax} floored at 1e-4; factor by the {@link Fp8Rounding} mode.
 *   <li>{@link #BLOCK_UE8M0} {@code fp8-block-ue8m0}: as {@code fp8-block}, the scale rounded up to
 *       a power of two ({@code 2^ceil(log2(amax/448))}, DeepGEMM's {@code ceil_to_ue8m0}), written
 *       as f32; factor {@code 1/scale} (exact, so every rounding mode gives the same bytes).
 *   <li>{@link #MXFP8} {@code mxfp8}: {@code 1 × 32} tiles along the columns (OCP MX v1.0): shared
 *       exponent {@code e = clamp(floor(log2(amax)) - 8, -127, 127)} (8: e4m3's largest exponent),
 *       scale {@code 2^e} written as its E8M0 byte {@code e + 127} (u8); factor {@code 2^-e}; no
 *       floor (an all-zero tile has byte 0); a tile holding NaN or ±Inf has the NaN byte 0xff and
 *       NaN codes.
 *   <li>{@link #TENSOR} {@code fp8-tensor}: one tile per matrix (vLLM's online dynamic fp8; an
 *       expert stack has a scale per expert); f32 scale {@code amax/448} as {@code fp8-block}.
 *   <li>{@link #CHANNEL} {@code fp8-channel}: one tile per row (output channel); f32 scale as
 *       {@code fp8-block}.
 * </ul>
 *
 * In the f32-scale formats a NaN in a tile makes its scale and codes NaN; an infinity makes the
 * scale infinite, the factor 0, the finite values' codes ±0 and the infinity's NaN.
 */
@Internal
public enum QuantFormat {
  BLOCK("fp8-block", "_scale_inv"),
  BLOCK_UE8M0("fp8-block-ue8m0", "_scale_inv"),
  MXFP8("mxfp8", "_scale"),
  TENSOR("fp8-tensor", "_scale"),
  CHANNEL("fp8-channel", "_scale");

  /** The tile width of {@link #MXFP8}. */
  public static final int MX_BLOCK = 32;

  /** e4m3fn's largest exponent (448 = 1.75 · 2^8), the OCP MX rule's {@code emax_elem}. */
  static final int E4M3_EMAX = 8;

  private static final ValueLayout.OfFloat F32 =
      ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  private final String label;
  private final String scaleSuffix;

  QuantFormat(String label, String scaleSuffix) {
    this.label = label;
    this.scaleSuffix = scaleSuffix;
  }

  /** The option value: {@code fp8-block}, {@code fp8-block-ue8m0}, {@code mxfp8}, ... */
  public String label() {
    return label;
  }

  /**
   * The suffix of the scale tensor's name: vLLM's {@code weight_scale_inv} for block formats,
   * {@code weight_scale} for tensor and channel scales; {@code weight_scale} (u8 E8M0) for MXFP8.
   */
  public String scaleSuffix() {
    return scaleSuffix;
  }

  /** The dtype of the scale tensor. */
  public DType scaleDtype() {
    return this == MXFP8 ? DType.U8 : DType.F32;
  }

  /** Whether the option {@code --quant-block} sets this format's tile. */
  public boolean hasBlock() {
    return this == BLOCK || this == BLOCK_UE8M0;
  }

  /** Whether the {@link Fp8Rounding} mode changes this format's bytes. */
  public boolean rounds() {
    return this == BLOCK || this == TENSOR || this == CHANNEL;
  }

  /** The rows of a tile of a {@code rows × cols} matrix. */
  public long tileRows(int block, long rows) {
    return switch (this) {
      case BLOCK, BLOCK_UE8M0 -> block;
      case MXFP8, CHANNEL -> 1;
      case TENSOR -> Math.max(1, rows);
    };
  }

  /** The columns of a tile of a {@code rows × cols} matrix. */
  public long tileCols(int block, long cols) {
    return switch (this) {
      case BLOCK, BLOCK_UE8M0 -> block;
      case MXFP8 -> MX_BLOCK;
      case CHANNEL, TENSOR -> Math.max(1, cols);
    };
  }

  /**
   * The shape of the engine's scale tensor for a weight of {@code weight} whose matrices hold
   * members of {@code memberRows} rows (null: one): block formats give each member its block rows;
   * {@code fp8-tensor} is vLLM's {@code [1]} for a matrix and {@code [experts]} for a stack; the
   * row formats {@link BlockQuantizer#scaleShape(Shape, QuantFormat, int)}.
   */
  public Shape engineScaleShape(Shape weight, int block, long[] memberRows) {
    Shape tiles = BlockQuantizer.scaleShape(weight, this, block);
    long[] d = tiles.dims();
    int r = d.length;
    switch (this) {
      case BLOCK, BLOCK_UE8M0 -> {
        if (memberRows != null) {
          long blockRows = 0;
          for (long m : memberRows) {
            blockRows += BlockQuantizer.ceilDiv(m, block);
          }
          d[r - 2] = blockRows;
        }
        return Shape.of(d);
      }
      case TENSOR -> {
        return r == 2 ? Shape.of(1) : Shape.of(java.util.Arrays.copyOf(d, r - 2));
      }
      default -> {
        return tiles;
      }
    }
  }

  /** The format an option names ({@code fp8-block}, ..., any case). */
  public static QuantFormat parse(String label) {
    for (QuantFormat f : values()) {
      if (f.label.equalsIgnoreCase(label.trim())) {
        return f;
      }
    }
    throw new IllegalArgumentException(
        "unknown fp8 format '"
            + label
            + "': expected fp8-block, fp8-block-ue8m0, mxfp8, fp8-tensor or fp8-channel");
  }

  /** Whether {@code label} names a format. */
  public static boolean isFormat(String label) {
    for (QuantFormat f : values()) {
      if (f.label.equalsIgnoreCase(label)) {
        return true;
      }
    }
    return false;
  }

  /** The amax a tile's scale and factor are computed from, given its {@code max|x|}. */
  float amax(float maxAbs) {
    if (this == MXFP8) {
      return Float.isFinite(maxAbs) ? maxAbs : Float.NaN;
    }
    return BlockQuantizer.amax(maxAbs);
  }

  /** The factor the values of a tile of this {@link #amax} are multiplied by. */
  float factor(float amax, Fp8Rounding rounding) {
    return switch (this) {
      case BLOCK, TENSOR, CHANNEL -> rounding.factor(amax);
      case BLOCK_UE8M0 -> 1f / ue8m0Ceil(amax / BlockQuantizer.E4M3_MAX);
      case MXFP8 -> Float.isNaN(amax) ? Float.NaN : Math.scalb(1f, -mxExponent(amax));
    };
  }

  /** The scale the engine multiplies a tile's codes by (for MXFP8, {@code 2^e}). */
  float scale(float amax) {
    return switch (this) {
      case BLOCK, TENSOR, CHANNEL -> amax / BlockQuantizer.E4M3_MAX;
      case BLOCK_UE8M0 -> ue8m0Ceil(amax / BlockQuantizer.E4M3_MAX);
      case MXFP8 -> Float.isNaN(amax) ? Float.NaN : Math.scalb(1f, mxExponent(amax));
    };
  }

  /** Writes scale number {@code index} of a tile of this {@link #amax}. */
  void writeScale(MemorySegment scales, long index, float amax) {
    if (this == MXFP8) {
      scales.set(
          ValueLayout.JAVA_BYTE,
          index,
          Float.isNaN(amax) ? (byte) 0xff : (byte) (mxExponent(amax) + 127));
    } else {
      scales.set(F32, 4 * index, scale(amax));
    }
  }

  /** Bytes per scale. */
  int scaleBytes() {
    return scaleDtype().elementSize();
  }

  /** {@code 2^ceil(log2(s))} for a positive finite {@code s}; NaN and infinity stay. */
  static float ue8m0Ceil(float s) {
    if (!Float.isFinite(s) || s <= 0) {
      return s;
    }
    int bits = Float.floatToRawIntBits(s);
    int exp = Math.getExponent(s);
    boolean power =
        exp >= Float.MIN_EXPONENT ? (bits & 0x7f_ffff) == 0 : Integer.bitCount(bits) == 1;
    if (exp < Float.MIN_EXPONENT) {
      // Subnormal: the exponent of its leading bit.
      exp = 31 - Integer.numberOfLeadingZeros(bits) - 149;
    }
    return Math.scalb(1f, power ? exp : exp + 1);
  }

  /**
   * The OCP MX shared exponent of a finite {@code amax}: {@code floor(log2(amax)) - 8}, clamped.
   */
  static int mxExponent(float amax) {
    // getExponent of 0 or a subnormal is -127: below the clamp either way.
    int e = Math.getExponent(amax) - E4M3_EMAX;
    return Math.max(-127, Math.min(127, e));
  }

  /** The lower-case label. */
  @Override
  public String toString() {
    return label.toLowerCase(Locale.ROOT);
  }
}
