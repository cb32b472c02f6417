package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * The parts of the ucx benchmark that do not measure: reading ucx_perftest's output and finding it.
 */
class UcxBenchTest {

  @Test
  void readsTheOverallBandwidthAndRateFromUcxPerftestCsv() {
    String output =
        """
        +--------------+---------+
        | API:          protocol layer |
        iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
         200,2353.126,2224.009,2224.009,449.64,1000.00,450,476
        """;
    UcxBench.PerftestResult r = UcxBench.PerftestResult.parseCsv(output);
    assertEquals(1000.0, r.mebibytesPerSecond());
    assertEquals(476.0, r.messagesPerSecond());
    assertEquals(1.048576, r.gbps(), 1e-12, "its MB are MiB");
  }

  @Test
  void refusesOutputWithoutAResultLine() {
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> UcxBench.PerftestResult.parseCsv("Waiting for connection...\n"));
    assertTrue(e.getMessage().contains("no result line"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> UcxBench.PerftestResult.parseCsv("12,3\n"));
  }

  @Test
  void findsProgramsOnThePath() {
    assertTrue(UcxBench.findOnPath("sh").isPresent(), "sh is on every PATH");
    assertTrue(UcxBench.findOnPath("no-such-program-mx").isEmpty());
  }
}
