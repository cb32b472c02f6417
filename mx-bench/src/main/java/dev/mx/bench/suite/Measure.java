package dev.mx.bench.suite;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
   * Median CPU seconds of the calling thread over {@code reps} runs (no warm-up: run it after a
   * wall-clock measurement of the same action). On a shared machine this leaves out time spent
   * waiting for a core, and also the garbage collector's own threads. NaN when the JVM cannot
   * measure thread CPU time.
   */
  public static double medianCpuSeconds(int reps, Action action) throws Exception {
    java.lang.management.ThreadMXBean threads =
        java.lang.management.ManagementFactory.getThreadMXBean();
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

  /**
   * Alternates metric and baseline runs so both see the same machine state; returns {metric,
   * baseline} medians.
   */
  public static double[] interleavedMedians(int warmups, int reps, Action metric, Action baseline)
      throws Exception {
    return Arrays.copyOf(interleavedWallAndCpuMedians(warmups, reps, metric, baseline), 2);
  }

  /**
   * As {@link #interleavedMedians}, also timing each run in CPU seconds of all Java threads, which
   * does not count time the OS gave to other processes (steadier on a shared machine). Returns the
   * medians {metric wall, baseline wall, metric CPU, baseline CPU}.
   */
  public static double[] interleavedWallAndCpuMedians(
      int warmups, int reps, Action metric, Action baseline) throws Exception {
    for (int i = 0; i < warmups; i++) {
      baseline.run();
      metric.run();
    }
    double[][] t = new double[4][reps];
    for (int i = 0; i < reps; i++) {
      timeOnce(baseline, t[1], t[3], i);
      timeOnce(metric, t[0], t[2], i);
    }
    double[] medians = new double[4];
    for (int k = 0; k < 4; k++) {
      Arrays.sort(t[k]);
      medians[k] = t[k][reps / 2];
    }
    return medians;
  }

  private static void timeOnce(Action action, double[] wall, double[] cpu, int i) throws Exception {
    long cpuStart = threadsCpuNanos();
    long start = System.nanoTime();
    action.run();
    wall[i] = (System.nanoTime() - start) / 1e9;
    cpu[i] = (threadsCpuNanos() - cpuStart) / 1e9;
  }

  /**
   * CPU time of every live Java thread, summed, in nanoseconds. Per-thread clocks are exact, unlike
   * the process clock, which ticks in 10 ms steps on Linux; a run's pool threads must outlive it.
   */
  private static long threadsCpuNanos() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long total = 0;
    for (long id : threads.getAllThreadIds()) {
      total += Math.max(0, threads.getThreadCpuTime(id));
    }
    return total;
  }
}
