package dev.mx.refit;

import dev.mx.api.annotation.Internal;

/** Rounding of reported numbers to a fixed count of decimals, as the records specify. */
@Internal
public final class Rounding {
  private Rounding() {}

  public static double round(double v, int decimals) {
    if (!Double.isFinite(v)) {
      return v;
    }
    return java.math.BigDecimal.valueOf(v)
        .setScale(decimals, java.math.RoundingMode.HALF_EVEN)
        .doubleValue();
  }
}
