package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.cli.bench.Benchmarks;
import org.junit.jupiter.api.Test;

/** Which benchmarks {@code mx bench} knows. */
class BenchCommandTest {

  @Test
  void ucxIsABenchmark() {
    assertTrue(Benchmarks.all().containsKey("ucx"), Benchmarks.all().keySet().toString());
    assertTrue(Benchmarks.all().get("ucx").description().contains("ucx_perftest"));
  }
}
