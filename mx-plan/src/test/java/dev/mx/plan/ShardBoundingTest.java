package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingDecision.Option;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.TransportCosts;
import dev.mx.api.util.Settings;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Shard bounding on hand-computed layouts: the decision, the staged shards and their per-shard
 * copies.
 */
class ShardBoundingTest {
  private static final Shape G = Shape.of(4, 8);
  private final ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
  private final PlanOptions shard =
      PlanOptions.fromSettings(BoundingMode.SHARD, Settings.of(Map.of(), Map.of()));

  /** Columns split over four publishers (a dim-1 TP split), each (4, 2). */
  private static SourceInfo columns() {
    List<Shard> shards = new java.util.ArrayList<>();
    for (int i = 0; i < 4; i++) {
      shards.add(
          new Shard(new long[] {0, 2L * i}, Shape.of(4, 2), "t" + i, 1000L * (i + 1), 4, null));
    }
    return new SourceInfo(G, DType.F32, shards);
  }

  @Test
  void dim1SplitStagesTheTwoTouchedShardsWhole() {
    // the receiver needs columns 4..7 (its half of a row-parallel weight): two trainer shards whole
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.narrow(1, 4, 4)), "p", 16, Shape.of(4, 4), DType.F32);
    TransferPlan plan =
        planner.plan(
            CaptureResult.of(List.of(c)),
            Map.of("w", columns()),
            shard.withCosts(new TransportCosts(1e-6, 24e9, 10e9)));
    assertEquals(List.of(), plan.segments());
    assertEquals(2, plan.stagedShards().size());
    StagedShard a = plan.stagedShards().get(0);
    assertEquals(2, a.shardIndex());
    assertEquals(new PullSegment("t2", 3000, "__stage__/w/2", 0, 32), a.segment());
    // the whole (4, 2) shard lands at parameter columns 0..1 of the (4, 4) destination at offset 16
    assertEquals(
        List.of(
            new RecordedCopy(
                "w", List.of(), "p", 16, Shape.of(4, 2), new long[] {4, 1}, DType.F32)),
        a.copies());
    StagedShard b = plan.stagedShards().get(1);
    assertEquals(
        new RecordedCopy("w", List.of(), "p", 18, Shape.of(4, 2), new long[] {4, 1}, DType.F32),
        b.copies().get(0));
    assertEquals(2, plan.descriptorCount());
    assertEquals(8, plan.exactDescriptorCount());
    assertEquals(64, plan.bytesPlanned());
    assertEquals(0, plan.extraWireBytes());
    BoundingDecision d = plan.decision("w");
    assertEquals(Option.SHARD_STAGING, d.chosen());
    assertTrue(d.reason().startsWith("shard_staging is cheapest: 2 descriptors"), d.reason());
    assertTrue(d.cost(Option.FULL_PULL).rejected().contains("no dim-0 partition"), d.reason());
    assertEquals(8, d.cost(Option.EXACT).descriptors());
  }

  @Test
  void aPartialShardIsCutAndTransposedRelativeToTheShard() {
    // rows 1..2 of columns 3..4, transposed: touches shards 1 and 2, one column of each
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w",
            List.of(OpSpec.narrow(0, 1, 2), OpSpec.narrow(1, 3, 2), OpSpec.of("t")),
            "p",
            0,
            Shape.of(2, 2),
            DType.F32);
    TransferPlan plan =
        planner.plan(
            CaptureResult.of(List.of(c)),
            Map.of("w", columns()),
            shard.withCosts(new TransportCosts(1e-3, 24e9, 10e9)).withMaxExtraWireRatio(10));
    assertEquals(Option.SHARD_STAGING, plan.decision("w").chosen());
    RecordedCopy first = plan.stagedShards().get(0).copies().get(0);
    assertEquals(
        List.of(
            OpSpec.narrow(0, 1, 2),
            OpSpec.narrow(1, 1, 1),
            new OpSpec("permute", List.of(1L, 0L), null)),
        first.opChain());
    assertEquals(Shape.of(1, 2), first.destShape());
    assertEquals(0, first.destOffset());
    RecordedCopy second = plan.stagedShards().get(1).copies().get(0);
    assertEquals(
        List.of(
            OpSpec.narrow(0, 1, 2),
            OpSpec.narrow(1, 0, 1),
            new OpSpec("permute", List.of(1L, 0L), null)),
        second.opChain());
    // source column 4 is destination row 1
    assertEquals(2, second.destOffset());
    assertEquals(64 - 16, plan.extraWireBytes());
  }

  @Test
  void theExtraWireBoundAndCheapDescriptorsKeepExact() {
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w",
            List.of(OpSpec.narrow(0, 0, 1), OpSpec.narrow(1, 3, 2)),
            "p",
            0,
            Shape.of(1, 2),
            DType.F32);
    TransferPlan bounded =
        planner.plan(
            CaptureResult.of(List.of(c)),
            Map.of("w", columns()),
            shard.withCosts(new TransportCosts(1, 24e9, 10e9)).withMaxExtraWireRatio(1));
    BoundingDecision d = bounded.decision("w");
    assertEquals(Option.EXACT, d.chosen());
    assertTrue(
        d.cost(Option.SHARD_STAGING).rejected().contains("more than the exact 8"), d.reason());
    assertEquals(2, bounded.segments().size());
    TransferPlan cheap =
        planner.plan(
            CaptureResult.of(List.of(c)),
            Map.of("w", columns()),
            shard.withCosts(new TransportCosts(1e-12, 24e9, 10e9)).withMaxExtraWireRatio(100));
    assertEquals(Option.EXACT, cheap.decision("w").chosen());
    assertNull(cheap.decision("w").cost(Option.SHARD_STAGING).rejected());
  }

  @Test
  void modelExpressModeThroughOptionsIsTheThresholdPlan() {
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.narrow(1, 4, 4)), "p", 0, Shape.of(4, 4), DType.F32);
    CaptureResult cap = CaptureResult.of(List.of(c));
    TransferPlan legacy = planner.plan(cap, Map.of("w", columns()), 2);
    TransferPlan viaOptions =
        planner.plan(
            cap,
            Map.of("w", columns()),
            shard.withBounding(BoundingMode.MODELEXPRESS).withMaxSegmentsPerCopy(2));
    assertEquals(legacy, viaOptions);
    assertEquals(List.of("w"), viaOptions.unboundedSources());
    assertEquals(List.of(), viaOptions.boundingDecisions());
  }

  @Test
  void aViewThatMixesShardsIsPulledWholeWithTheReason() {
    // flatten() merges both dims: no box, so no per-shard cut; replayed out of a whole-source pull
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.of("flatten")), "p", 0, Shape.of(32), DType.F32);
    TransferPlan plan = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", columns()), shard);
    assertEquals(List.of(), plan.fallback());
    BoundingDecision d = plan.decision("w");
    assertEquals(Option.FULL_PULL, d.chosen());
    assertTrue(
        d.cost(Option.SHARD_STAGING).rejected().contains("cannot be cut per shard"), d.reason());
    assertEquals(1, plan.fullPulls().size());
    assertEquals(
        16,
        plan.fullPulls().get(0).segments().size(),
        "an identity pull over column shards: 4 rows x 4");

    // with a hole no option can read it: fallback, with the reason
    SourceInfo partial =
        new SourceInfo(G, DType.F32, columns().shards().subList(0, 3)).withPartial(true);
    TransferPlan holes = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", partial), shard);
    assertEquals(List.of("w"), holes.fallback());
    assertTrue(
        holes.fallbackReasons().get("w").contains("holes"), holes.fallbackReasons().get("w"));
  }

  @Test
  void theDescriptorLimitIsANamedErrorBeforeAnythingIsBuilt() {
    // a (2^24, 2) source transposed: 2^25 single-element runs
    Shape big = Shape.of(1 << 24, 2);
    SourceInfo src =
        new SourceInfo(big, DType.U8, List.of(new Shard(new long[] {0, 0}, big, "a", 0, 1, null)));
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.of("t")), "p", 0, Shape.of(2, 1 << 24), DType.U8);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                planner.plan(
                    CaptureResult.of(List.of(c)),
                    Map.of("w", src),
                    shard
                        .withBounding(BoundingMode.MODELEXPRESS)
                        .withMaxSegmentsPerCopy(Integer.MAX_VALUE)
                        .withMaxDescriptors(1 << 20)));
    assertTrue(
        e.getMessage().contains("needs 33554432 exact descriptors, more than the limit of 1048576"),
        e.getMessage());
  }
}
