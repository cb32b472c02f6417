package dev.mx.cli.bench;

import java.io.PrintStream;

/**
 * Knobs shared by every benchmark.
 *
 * @param repetitions measured repetitions per metric (after warm-up)
 * @param threads threads for multi-threaded variants (0 = all cores)
 * @param progress where progress lines go (stderr)
 * @param scale what {@code mx bench scale} simulates (ignored by the other benchmarks)
 */
public record BenchOptions(int repetitions, int threads, PrintStream progress, ScaleSpec scale) {

  public BenchOptions(int repetitions, int threads, PrintStream progress) {
    this(repetitions, threads, progress, ScaleSpec.DEFAULT);
  }

  public int effectiveThreads() {
    return threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
  }
}
