package dev.mx.cli.bench;

import java.util.Arrays;

/** Timing helpers: warm up, then take the median of several runs, so one hiccup does not decide. */
public final class Measure {
  private Measure() {}

  /** An action to time; may throw. */
  @FunctionalInterface
  public interface Action {
    void run() throws Exception;
  }

  /** Median seconds of {@code reps} runs after {@code warmups} untimed runs. */
  public static double medianSeconds(int warmups, int reps, Action action) throws Exception {
    for (int i = 0; i < warmups; i++) {
      action.run();
    }
    double[] t = new double[reps];
    for (int i = 0; i < reps; i++) {
      long start = System.nanoTime();
      action.run();
      t[i] = (System.nanoTime() - start) / 1e9;
    }
    Arrays.sort(t);
    return reps % 2 == 1 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2;
  }

  /**
   * Median CPU seconds of the calling thread over {@code reps} runs (no warm-up: run it after a wall-clock
   * measurement of the same action). On a shared machine this leaves out time spent waiting for a core, and
   * also the garbage collector's own threads. NaN when the JVM cannot measure thread CPU time.
   */
  public static double medianCpuSeconds(int reps, Action action) throws Exception {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    if (!threads.isCurrentThreadCpuTimeSupported()) {
      return Double.NaN;
    }
    double[] t = new double[reps];
    for (int i = 0; i < reps; i++) {
      long start = threads.getCurrentThreadCpuTime();
      action.run();
      t[i] = (threads.getCurrentThreadCpuTime() - start) / 1e9;
    }
    Arrays.sort(t);
    return t[reps / 2];
  }

  /** Alternates metric and baseline runs so both see the same machine state; returns {metric, baseline} medians. */
  public static double[] interleavedMedians(int warmups, int reps, Action metric, Action baseline) throws Exception {
    for (int i = 0; i < warmups; i++) {
      baseline.run();
      metric.run();
    }
    double[] m = new double[reps];
    double[] b = new double[reps];
    for (int i = 0; i < reps; i++) {
      long s = System.nanoTime();
      baseline.run();
      b[i] = (System.nanoTime() - s) / 1e9;
      s = System.nanoTime();
      metric.run();
      m[i] = (System.nanoTime() - s) / 1e9;
    }
    Arrays.sort(m);
    Arrays.sort(b);
    return new double[] {m[reps / 2], b[reps / 2]};
  }
}
