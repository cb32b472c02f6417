package dev.mx.refit;

/** Rounding of reported numbers to a fixed count of decimals, as the records specify. */
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
