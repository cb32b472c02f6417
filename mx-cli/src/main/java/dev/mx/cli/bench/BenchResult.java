package dev.mx.cli.bench;

/**
 * One measured metric beside the baseline it is judged against. For rates (higher is better) the
 * ratio is value / baseline.
 */
public record BenchResult(
    String metric, double value, String unit, String baselineMetric, double baselineValue) {

  public double ratio() {
    return baselineValue == 0 ? Double.NaN : value / baselineValue;
  }
}
