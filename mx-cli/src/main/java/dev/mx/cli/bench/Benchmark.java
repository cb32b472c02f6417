package dev.mx.cli.bench;

import java.util.List;

/** A benchmark runnable by {@code mx bench}. */
public interface Benchmark {

  String name();

  /** One line for {@code mx bench --help}. */
  String description();

  /** Runs the metric and its baseline; progress may go to stderr. */
  List<BenchResult> run(BenchOptions options) throws Exception;
}
