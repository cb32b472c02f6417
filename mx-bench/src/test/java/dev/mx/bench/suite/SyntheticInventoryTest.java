package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import dev.mx.plan.ReshardPlanner;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The P4/P5 inventory is what the benchmark claims it is (values only; timings are never asserted).
 */
class SyntheticInventoryTest {

  @Test
  void fullInventoryHasTheDeepSeekV3SourceCount() {
    SyntheticInventory inv = SyntheticInventory.deepSeekV3(8, 8, 3, 58);
    // 58 x 256 x 3 experts + 61 x 9 attention/norms + 58 x 5 router/shared + 3 x 3 dense MLP + 3
    // model-level
    assertEquals(58 * 256 * 3 + 61 * 9 + 58 * 5 + 3 * 3 + 3, inv.sources.size());
    assertEquals(inv.sources.size(), inv.copies.size());
  }

  @Test
  void oneLayerPlansWithoutFallbackAndBoundsTheRowSlices() {
    SyntheticInventory inv = SyntheticInventory.deepSeekV3(8, 8, 3, 1);
    TransferPlan plan =
        new ReshardPlanner(Settings.of(Map.of(), Map.of())).plan(inv.capture(), inv.sources, 64);
    assertEquals(0, plan.fallback().size());
    assertEquals(1, plan.converts().size(), "one bf16 -> f32 router bias per MoE layer");
    // every expert's down projection (7168 runs for a 256-column slice) is pulled whole from its EP
    // owner
    long downPulls =
        plan.fullPulls().stream().filter(f -> f.srcName().contains(".mlp.experts.")).count();
    assertEquals(256, downPulls);
    FullPullSource down37 =
        plan.fullPulls().stream()
            .filter(f -> f.srcName().equals("model.layers.3.mlp.experts.37.down_proj.weight"))
            .findFirst()
            .orElseThrow();
    assertEquals("trainer-1", down37.segments().get(0).session());
    assertEquals(7168L * 2048 * 2, down37.segments().get(0).nbytes());
    // expert 37's gate rows 768..1023 are one run into w13 at expert 37's gate half
    PullSegment gate =
        plan.segments().stream()
            .filter(
                s ->
                    s.paramName().equals("model.layers.3.mlp.experts.w13_weight")
                        && s.session().equals("trainer-1"))
            .filter(s -> s.dstByte() == 37L * 512 * 7168 * 2)
            .findFirst()
            .orElseThrow();
    assertEquals(256L * 7168 * 2, gate.nbytes());
    assertTrue(
        plan.exactDescriptorCount() > 256L * 7168,
        "the exact baseline counts every down-projection run");
  }
}
