package dev.mx.cli.bench;

import java.util.List;

/** A benchmark runnable by {@code mx bench}. */
public interface Benchmark {

  String name();

  /** One line for {@code mx bench --help}. */
  String description();

  /**
   * Checks the options before anything runs.
   *
   * @throws IllegalArgumentException naming the option or dimension at fault (bad usage: exit 2)
   */
  default void checkUsage(BenchOptions options) {}

  /** Runs the metric and its baseline; progress may go to stderr. */
  List<BenchResult> run(BenchOptions options) throws Exception;
}
