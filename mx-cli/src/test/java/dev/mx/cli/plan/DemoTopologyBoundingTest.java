package dev.mx.cli.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import dev.mx.layout.PlanningInventory;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.plan.BoundingSummary;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import dev.mx.transport.mem.MemTransportProvider;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The default demo topology — Llama-3.2-1B, Megatron TP=4 → vLLM TP=2, bf16 — planned for each
 * receiver rank in both modes with the real layouts of mx-layout: ModelExpress bounding leaves the
 * row-parallel {@code o_proj} / {@code down_proj} exact (131k descriptors, their shards are no
 * dim-0 partition); shard bounding with the mem transport's costs stages their shards whole and
 * plans at most 1,000 descriptors per rank, with no extra wire bytes and every element a copy needs
 * written once.
 */
class DemoTopologyBoundingTest {

  @Test
  void shardBoundingPlansTheDemoInUnderAThousandDescriptorsPerRank() {
    ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
    PlanOptions shard;
    try (var mem =
        new MemTransportProvider().create(dev.mx.api.transport.TransportConfig.of("costs"))) {
      shard = PlanOptions.forTransport(BoundingMode.SHARD, Settings.of(Map.of(), Map.of()), mem);
    }
    for (int rank = 0; rank < 2; rank++) {
      PlanningInventory inv =
          PlanningInventory.build(
              "llama-3.2-1b",
              new TrainerTopology.Megatron(4, 1, 1),
              InferenceTopology.tp(2),
              rank,
              DType.BF16);
      TransferPlan mx = planner.plan(inv.capture().result(), inv.sources(), 64);
      TransferPlan sh = planner.plan(inv.capture().result(), inv.sources(), shard);
      System.out.printf(
          "demo topology rank %d: modelexpress %d descriptors (%d unbounded sources), shard %d descriptors"
              + " (%s), extra wire bytes %d%n",
          rank,
          mx.descriptorCount(),
          mx.unboundedSources().size(),
          sh.descriptorCount(),
          BoundingSummary.counts(sh),
          sh.extraWireBytes());
      System.out.println(BoundingSummary.logLine(sh));
      assertTrue(mx.descriptorCount() > 100_000, "ModelExpress bounding: " + mx.descriptorCount());
      assertTrue(sh.descriptorCount() <= 1_000, "shard bounding: " + sh.descriptorCount());
      assertEquals(Map.of(), sh.fallbackReasons());
      TransferPlan generic =
          planner.plan(
              inv.capture().result(),
              inv.sources(),
              PlanOptions.fromSettings(BoundingMode.SHARD, Settings.of(Map.of(), Map.of())));
      assertTrue(
          generic.descriptorCount() <= 1_000,
          "shard bounding at the default (RDMA) costs: " + generic.descriptorCount());
      assertEquals(mx.exactBytes(), sh.exactBytes());
      assertEquals(
          0, sh.extraWireBytes(), "each rank needs whole trainer shards of the split weights");
      for (String unbounded : mx.unboundedSources()) {
        BoundingDecision d = sh.decision(unbounded);
        assertEquals(BoundingDecision.Option.SHARD_STAGING, d.chosen(), d.reason());
      }
      // every element a non-convert copy needs is written exactly once, whichever way its source is
      // read
      long needed = 0;
      for (RecordedCopy c : inv.capture().result().copies()) {
        if (inv.sources().get(c.srcName()).dtype() == c.destDtype()) {
          needed += c.destShape().numel();
        }
      }
      long written = 0;
      for (int i = 0; i < sh.segments().size(); i++) {
        written += sh.segments().get(i).nbytes() / 2;
      }
      for (StagedShard s : sh.stagedShards()) {
        for (RecordedCopy c : s.copies()) {
          written += c.destShape().numel();
        }
      }
      for (FullPullSource f : sh.fullPulls()) {
        for (RecordedCopy c : f.copies()) {
          written += c.destShape().numel();
        }
      }
      assertEquals(needed, written, "rank " + rank);
    }
  }

  @Test
  void aDtypeChangingDemoIsStagedAndCastToo() {
    // --trainer-dtype f32 --inference-dtype bf16: every copy changes dtype, so ModelExpress mode
    // converts all
    ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
    PlanOptions shard =
        PlanOptions.fromSettings(BoundingMode.SHARD, Settings.of(Map.of(), Map.of()));
    var arch = dev.mx.layout.model.ModelConfigs.load("llama-3.2-1b");
    for (int rank = 0; rank < 2; rank++) {
      PlanningInventory inv =
          PlanningInventory.build(
              new TrainerTopology.Megatron(4, 1, 1).layout(arch, DType.F32),
              new dev.mx.layout.vllm.VllmLayout(arch, InferenceTopology.tp(2), rank, DType.BF16));
      TransferPlan mx = planner.plan(inv.capture().result(), inv.sources(), 64);
      TransferPlan sh = planner.plan(inv.capture().result(), inv.sources(), shard);
      System.out.printf(
          "f32 -> bf16 demo topology rank %d: modelexpress %d descriptors, shard %d (%s)%n",
          rank, mx.descriptorCount(), sh.descriptorCount(), BoundingSummary.counts(sh));
      assertTrue(mx.descriptorCount() > 100_000, "ModelExpress converts: " + mx.descriptorCount());
      assertTrue(sh.descriptorCount() <= 1_000, "shard bounding: " + sh.descriptorCount());
      assertEquals(Map.of(), sh.fallbackReasons());
      assertTrue(
          sh.stagedShards().stream()
              .flatMap(s -> s.copies().stream())
              .allMatch(c -> c.destDtype() == DType.BF16),
          "staged f32 shards are cast to bf16 while replayed");
    }
  }
}
