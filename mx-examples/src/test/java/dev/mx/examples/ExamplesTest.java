package dev.mx.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs both examples and checks every installed element against the global tensors. */
class ExamplesTest {

  /** Inference rank {@code r}'s qkv_proj: its q rows, then its k rows, then its v rows. */
  private static float[] expectedQkv(int r) {
    int n = ExampleModel.INFERENCE_TP;
    float[] out = new float[(8 / n + 4 / n + 4 / n) * 16];
    int at = 0;
    for (String name : List.of("q_proj.weight", "k_proj.weight", "v_proj.weight")) {
      long rows = ExampleModel.GLOBALS.get(name).dim(0) / n;
      for (long row = r * rows; row < (r + 1) * rows; row++) {
        for (int c = 0; c < 16; c++) {
          out[at++] = ExampleModel.value(name, row * 16 + c);
        }
      }
    }
    return out;
  }

  /** Inference rank {@code r}'s o_proj: its two columns of every one of the 16 rows. */
  private static float[] expectedO(int r) {
    Shape o = ExampleModel.GLOBALS.get("o_proj.weight");
    long cols = o.dim(1) / ExampleModel.INFERENCE_TP;
    float[] out = new float[(int) (o.dim(0) * cols)];
    int at = 0;
    for (long row = 0; row < o.dim(0); row++) {
      for (long c = r * cols; c < (r + 1) * cols; c++) {
        out[at++] = ExampleModel.value("o_proj.weight", row * o.dim(1) + c);
      }
    }
    return out;
  }

  private static void assertResharded(List<Map<String, float[]>> ranks) {
    assertEquals(ExampleModel.INFERENCE_TP, ranks.size());
    for (int r = 0; r < ranks.size(); r++) {
      assertEquals(java.util.Set.of("qkv_proj.weight", "o_proj.weight"), ranks.get(r).keySet());
      assertArrayEquals(
          expectedQkv(r), ranks.get(r).get("qkv_proj.weight"), "qkv_proj of rank " + r);
      assertArrayEquals(expectedO(r), ranks.get(r).get("o_proj.weight"), "o_proj of rank " + r);
    }
  }

  @Test
  void inProcessOverMemReshardsTp2IntoTp4WithFusedQkv() throws Exception {
    assertResharded(InProcessExample.run());
  }

  @Test
  void acrossProcessesOverTheBestTransport(@TempDir Path store) throws Exception {
    boolean require = Boolean.getBoolean("mx.test.requireNative");
    String best = CrossProcessExample.bestTransport().name();
    if (!require) {
      Assumptions.assumeTrue(
          !best.equals("mem"),
          "only the mem transport is available here: "
              + dev.mx.api.transport.TransportProvider.registry().describeAll());
    }
    assertResharded(CrossProcessExample.run(store));
  }

  @Test
  void theMetricsExamplePrintsAPrometheusScrapeOfEveryRanksRefit() throws Exception {
    String scrape = MetricsExample.run();
    for (int r = 0; r < ExampleModel.INFERENCE_TP; r++) {
      String tags = "rank=\"" + r + "\",transport=\"mem\"";
      assertTrue(
          scrape.contains("mx_refit_installed_step{" + tags + "} 0.0"),
          "installed step of rank " + r + " in\n" + scrape);
      assertTrue(
          scrape.contains("mx_refit_seconds_count{outcome=\"installed\"," + tags + "} 1"),
          "one installed refit of rank " + r + " in\n" + scrape);
      assertTrue(
          scrape.contains(
              "mx_refit_stage_seconds_count{rank=\""
                  + r
                  + "\",stage=\"install\",transport=\"mem\"} 1"),
          "install stage of rank " + r + " in\n" + scrape);
    }
    // Every rank reads at least what it installs: 4 qkv rows of 16 f32 and 16 o_proj rows of 2.
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile(
                "mx_refit_bytes_total\\{rank=\"0\",transport=\"mem\"} (\\S+)")
            .matcher(scrape);
    assertTrue(m.find(), scrape);
    assertTrue(Double.parseDouble(m.group(1)) >= (4 * 16 + 16 * 2) * 4, m.group(1));
  }

  /**
   * The RL loop: every committed step is live on every rank, element by element, and the rejected
   * step is rolled back to the last committed one on every rank.
   */
  @Test
  void theRlLoopCommitsEveryStepAndRestoresTheRejectedOne() throws Exception {
    int steps = 3;
    RlLoopExample.Result r = RlLoopExample.run(steps);
    assertEquals(steps, r.committed().size());
    for (int step = 0; step < steps; step++) {
      assertAt(r.committed().get(step), step);
    }
    assertAt(r.restored(), steps - 1);
    assertEquals(ExampleModel.INFERENCE_TP, r.notes().size(), r.notes().toString());
    for (int rank = 0; rank < ExampleModel.INFERENCE_TP; rank++) {
      assertEquals("receiver " + rank + ": back on step " + (steps - 1), r.notes().get(rank));
    }
  }

  /**
   * Every rank's live weights are {@code step}'s: the static example's values plus 0.5 per step.
   */
  private static void assertAt(List<Map<String, float[]>> ranks, int step) {
    assertEquals(ExampleModel.INFERENCE_TP, ranks.size());
    for (int r = 0; r < ranks.size(); r++) {
      for (String p : List.of("qkv_proj.weight", "o_proj.weight")) {
        float[] want = p.startsWith("qkv") ? expectedQkv(r) : expectedO(r);
        for (int i = 0; i < want.length; i++) {
          want[i] += 0.5f * step;
        }
        assertArrayEquals(want, ranks.get(r).get(p), p + " of rank " + r + " at step " + step);
      }
    }
  }
}
