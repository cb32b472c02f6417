package dev.mx.cli.bench;

import java.io.PrintStream;

/**
 * Knobs shared by every benchmark.
 *
 * @param repetitions measured repetitions per metric (after warm-up)
 * @param threads threads for multi-threaded variants (0 = all cores)
 * @param progress where progress lines go (stderr)
 */
public record BenchOptions(int repetitions, int threads, PrintStream progress) {

  public int effectiveThreads() {
    return threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
  }
}
