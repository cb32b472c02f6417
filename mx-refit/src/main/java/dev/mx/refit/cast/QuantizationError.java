package dev.mx.refit.cast;

import dev.mx.api.annotation.Internal;

/**
 * How far block-quantized weights are from their source: over every finite source element {@code x}
 * with dequantized value {@code d = e4m3(q) * scale_inv} (f32), the largest {@code |d - x|} and the
 * largest {@code |d - x| / |x|} (x not zero), both in f32.
 */
@Internal
public record QuantizationError(float maxAbs, float maxRel) {
  /** No element measured yet. */
  public static final QuantizationError NONE = new QuantizationError(0f, 0f);

  /** The larger of both maxima. */
  public QuantizationError max(QuantizationError other) {
    return new QuantizationError(
        Math.max(maxAbs, other.maxAbs()), Math.max(maxRel, other.maxRel()));
  }
}
