package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Which benchmarks {@code mx bench} knows. */
class BenchCommandTest {

  @Test
  void ucxIsABenchmark() {
    assertTrue(
        BenchCommand.benchmarks().containsKey("ucx"),
        BenchCommand.benchmarks().keySet().toString());
    assertTrue(BenchCommand.benchmarks().get("ucx").description().contains("ucx_perftest"));
  }
}
