package dev.mx.refit.cast;

import dev.mx.api.annotation.Internal;
import java.util.Locale;

/**
 * How a block quantizer computes a tile's scaling factor from its {@code amax}: the engines and
 * kernels that produce FP8 block weights do not agree on the f32 operations, and a factor one ulp
 * apart moves about 0.03 % of the codes by one (on gaussian weights). Every mode writes the same
 * {@code scale_inv = RN(amax / 448)} and encodes {@code e4m3_rne(clamp(RN(x · factor), ±448))};
 * only the factor differs:
 *
 * <ul>
 *   <li>{@link #EXACT}: {@code RN(448 / amax)}, the correctly rounded quotient;
 *   <li>{@link #VLLM}: {@code RN(1 / RN(amax / 448))}, vLLM's {@code per_block_cast_to_fp8} ({@code
 *       x * (1.0 / (amax / 448.0))}: the scale, then its reciprocal, each rounded to f32);
 *   <li>{@link #DEEPGEMM}: {@code RN(RN(1 / amax) · 448)}, DeepGEMM's {@code x * (448.0 / amax)} as
 *       PyTorch evaluates a scalar divided by a tensor (the tensor's reciprocal, times the scalar).
 * </ul>
 *
 * {@code RN} is f32 round-to-nearest-even; {@code amax = max(max|x|, 1e-4)} in every mode.
 */
@Internal
public enum Fp8Rounding {
  EXACT,
  VLLM,
  DEEPGEMM;

  /** The factor a tile of this {@code amax} (already floored) is multiplied by. */
  public float factor(float amax) {
    return switch (this) {
      case EXACT -> BlockQuantizer.E4M3_MAX / amax;
      case VLLM -> 1f / (amax / BlockQuantizer.E4M3_MAX);
      case DEEPGEMM -> (1f / amax) * BlockQuantizer.E4M3_MAX;
    };
  }

  /** The mode named {@code exact}, {@code vllm} or {@code deepgemm} (any case). */
  public static Fp8Rounding parse(String name) {
    try {
      return valueOf(name.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "unknown fp8 rounding '" + name + "': expected exact, vllm or deepgemm", e);
    }
  }

  /** The lower-case name, as options spell it. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }
}
