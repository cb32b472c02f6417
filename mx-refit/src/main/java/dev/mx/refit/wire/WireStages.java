package dev.mx.refit.wire;

import dev.mx.api.annotation.Internal;

/** Stage names the wire policies report (seconds); a phase that did not run has no key. */
@Internal
public final class WireStages {
  /** All three groups in one batch. */
  public static final String FUSED = "wire_fused_s";

  /** Exact segments straight into receive buffers. */
  public static final String EXACT = "wire_exact_s";

  /** Whole sources into full-pull staging. */
  public static final String FULL = "wire_full_s";

  /** Dtype-mismatched sources into convert staging. */
  public static final String CONVERT = "wire_convert_s";

  private WireStages() {}

  /**
   * Seconds spent on the wire from a policy's stages: the fused stage when present, else the sum of
   * the phases (missing phases count as zero).
   */
  public static double wireSeconds(java.util.Map<String, Double> stages) {
    Double fused = stages.get(FUSED);
    if (fused != null) {
      return fused;
    }
    return stages.getOrDefault(EXACT, 0.0)
        + stages.getOrDefault(FULL, 0.0)
        + stages.getOrDefault(CONVERT, 0.0);
  }
}
