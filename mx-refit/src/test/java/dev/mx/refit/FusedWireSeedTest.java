package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.refit.cast.Casts;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Seed 000 ported: fused vs phased wire in {@code Receiver.updateWeights}, over the real {@code
 * mem} transport. A refit reads three groups of bytes (exact segments into receive buffers, whole
 * sources into full-pull staging, dtype-mismatched sources into convert staging); fused issues them
 * as one batch. The tests that catch a wrong fusion: the receive buffers are byte-identical either
 * way, and the re-slice and cast run after the wire.
 */
class FusedWireSeedTest {
  private static final int EL = SeedScenario.EL;

  /** One refit of the seed plan with {@code MX_RESHARD_FUSED_WIRE} set as given. */
  private record Run(
      RecordingInstaller installer, RecordingTransport transport, Map<String, Object> metrics) {}

  private static Run run(boolean fused, boolean allGroups) {
    try (Harness h = new Harness(allGroups);
        Receiver receiver =
            h.builder(Map.of("MX_RESHARD_FUSED_WIRE", fused ? "1" : "0", "MX_REFIT_PIPELINE", "0"))
                .build()) {
      return new Run(h.installer, h.cluster.receiver, receiver.updateWeights(1));
    }
  }

  @Test
  void fusedIssuesOneBatchAndPhasedIssuesThree() {
    assertEquals(List.of(3), run(true, true).transport().batchSizes);
    assertEquals(List.of(1, 1, 1), run(false, true).transport().batchSizes);
  }

  @Test
  void fusedAndPhasedProduceIdenticalBuffers() {
    Run fused = run(true, true);
    Run phased = run(false, true);
    assertEquals(fused.installer().last.keySet(), phased.installer().last.keySet());
    for (String name : fused.installer().last.keySet()) {
      assertArrayEquals(fused.installer().last.get(name), phased.installer().last.get(name), name);
    }
    // And the accounting agrees, so a dashboard cannot tell the paths apart.
    assertEquals(fused.metrics().get("bytes_received"), phased.metrics().get("bytes_received"));
    assertEquals(fused.metrics().get("segments"), phased.metrics().get("segments"));
  }

  @Test
  void reconstructsTheExpectedValues() {
    RecordingInstaller installed = run(true, true).installer();
    assertArrayEquals(TestCluster.arange(0, 8), installed.floats("exact"));
    // First two columns of the 4x4 source 100..115, re-sliced locally after the full pull.
    assertArrayEquals(
        new float[] {100, 101, 104, 105, 108, 109, 112, 113}, installed.floats("strided"));
    // Served bf16, cast up to the f32 destination after the wire.
    float[] router = new float[4];
    for (int i = 0; i < 4; i++) {
      router[i] = Casts.bf16ToF32(Casts.f32ToBf16(200 + i));
    }
    assertArrayEquals(router, installed.floats("router"));
    assertEquals(DType.F32.elementSize(), EL);
  }

  @Test
  void installRunsAfterEveryRead() {
    Run fused = run(true, true);
    assertEquals(List.of("install"), fused.installer().order);
    assertEquals(List.of(3), fused.transport().batchSizes);
    assertEquals(List.of(1), fused.transport().installedAfter);

    Run phased = run(false, true);
    assertEquals(List.of("install"), phased.installer().order);
    assertEquals(List.of(1, 1, 1), phased.transport().batchSizes);
    assertEquals(List.of(3), phased.transport().installedAfter);
  }

  @Test
  void accountingCoversAllThreeGroups() {
    Map<String, Object> metrics = run(true, true).metrics();
    assertEquals(3L, metrics.get("segments"));
    assertEquals((long) (8 * EL + 16 * EL + 4 * 2), metrics.get("bytes_received"));
    assertEquals(1L, metrics.get("full_pull_sources"));
    assertEquals(1L, metrics.get("converts"));
    assertEquals(0L, metrics.get("fallback"));
  }

  @Test
  void emptyFullPullAndConvertGroupsAreSkipped() {
    // A plan with only exact segments must still issue exactly one batch, under both policies.
    for (boolean fused : new boolean[] {true, false}) {
      Run r = run(fused, false);
      assertEquals(List.of(1), r.transport().batchSizes, fused ? "fused" : "phased");
      assertTrue(r.metrics().containsKey(fused ? "wire_fused_s" : "wire_exact_s"));
    }
  }
}
