package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link ShardTiling} and {@link PlanInputCheck}: each rejection names the JSON path and the box at
 * fault.
 */
class PlanInputCheckTest {
  private static final Shape G = Shape.of(4, 8);

  private static Shard shard(long r, long c, long rows, long cols, long addr) {
    return new Shard(new long[] {r, c}, Shape.of(rows, cols), "s" + addr, addr, 4, null);
  }

  @Test
  void tilingAcceptsGridsAndReplicasAndNamesTheFirstHole() {
    assertNull(
        ShardTiling.find(
            "w",
            new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 4, 1), shard(0, 4, 4, 4, 2)))));
    assertNull(
        ShardTiling.find(
            "w", new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 8, 1), shard(0, 0, 4, 8, 2)))),
        "identical boxes are replicas");
    ShardTilingException hole =
        ShardTiling.find(
            "w", new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 4, 1), shard(2, 4, 2, 4, 2))));
    assertEquals(ShardTilingException.Kind.HOLE, hole.kind());
    assertEquals(new Box(new long[] {0, 4}, new long[] {2, 8}), hole.box());
    assertEquals("sources.w.shards", hole.path());
    assertTrue(
        hole.getMessage().contains("hold 24 of its 32 elements: no shard holds [0:2, 4:8]"),
        hole.getMessage());
    // a partial source is allowed to have holes
    PlanInputCheck.checkSource(
        "w", new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 4, 1))).withPartial(true));
  }

  @Test
  void tilingNamesTheOverlapBoxAndBothShards() {
    ShardTilingException e =
        assertThrows(
            ShardTilingException.class,
            () ->
                ShardTiling.check(
                    "w",
                    new SourceInfo(
                        G, DType.F32, List.of(shard(0, 0, 3, 8, 1), shard(2, 0, 2, 8, 2)))));
    assertEquals(ShardTilingException.Kind.OVERLAP, e.kind());
    assertEquals(new Box(new long[] {2, 0}, new long[] {3, 8}), e.box());
    assertEquals("sources.w.shards[1]", e.path());
    assertTrue(e.getMessage().contains("shards #0 (session 's1'"), e.getMessage());
  }

  @Test
  void addressesAndByteCountsMustFit() {
    PlanInputException neg =
        assertThrows(
            PlanInputException.class,
            () ->
                PlanInputCheck.checkSource(
                    "w", new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 8, -8)))));
    assertEquals("sources.w.shards[0].addr", neg.path());
    PlanInputException past =
        assertThrows(
            PlanInputException.class,
            () ->
                PlanInputCheck.checkSource(
                    "w",
                    new SourceInfo(
                        G, DType.F32, List.of(shard(0, 0, 4, 8, Long.MAX_VALUE - 100)))));
    assertTrue(past.getMessage().contains("ends past the largest address"), past.getMessage());
    Shape huge = Shape.of(1L << 40, 1L << 22);
    PlanInputException bytes =
        assertThrows(
            PlanInputException.class,
            () -> PlanInputCheck.checkSource("w", new SourceInfo(huge, DType.F32, List.of())));
    assertEquals("sources.w.global_shape", bytes.path());
  }

  @Test
  void destinationStridesMustNotAlias() {
    RecordedCopy ok =
        new RecordedCopy("w", List.of(), "p", 0, Shape.of(3, 2), new long[] {2, 3}, DType.F32);
    PlanInputCheck.checkCopy(ok, "copies[0]"); // interleaved but injective: 0 3 2 5 4 7
    RecordedCopy zero =
        new RecordedCopy("w", List.of(), "p", 0, Shape.of(4, 8), new long[] {0, 1}, DType.F32);
    PlanInputException e =
        assertThrows(PlanInputException.class, () -> PlanInputCheck.checkCopy(zero, "copies[2]"));
    assertEquals("copies[2].dest_stride", e.path());
    assertTrue(e.getMessage().contains("dim 0 has 4 elements and stride 0"), e.getMessage());
    RecordedCopy overlapping =
        new RecordedCopy("w", List.of(), "p", 0, Shape.of(4, 8), new long[] {4, 1}, DType.F32);
    e =
        assertThrows(
            PlanInputException.class, () -> PlanInputCheck.checkCopy(overlapping, "copies[0]"));
    assertTrue(e.getMessage().contains("two elements land at element offset 4"), e.getMessage());
    RecordedCopy far =
        new RecordedCopy(
            "w", List.of(), "p", Long.MAX_VALUE / 2, Shape.of(4, 8), new long[] {8, 1}, DType.F32);
    e = assertThrows(PlanInputException.class, () -> PlanInputCheck.checkCopy(far, "copies[1]"));
    assertEquals("copies[1].dest_offset", e.path());
  }

  @Test
  void thePlannerChecksInputsOnTheOptionsPathOnly() {
    SourceInfo holes = new SourceInfo(G, DType.F32, List.of(shard(0, 0, 4, 4, 1)));
    RecordedCopy c = RecordedCopy.contiguous("w", List.of(), "p", 0, G, DType.F32);
    ReshardPlanner planner = new ReshardPlanner(dev.mx.api.util.Settings.of(Map.of(), Map.of()));
    // the ModelExpress-compatible SPI keeps today's behaviour
    planner.plan(CaptureResult.of(List.of(c)), Map.of("w", holes), 64);
    PlanOptions opts =
        PlanOptions.fromSettings(
            dev.mx.api.plan.BoundingMode.MODELEXPRESS,
            dev.mx.api.util.Settings.of(Map.of(), Map.of()));
    ShardTilingException e =
        assertThrows(
            ShardTilingException.class,
            () -> planner.plan(CaptureResult.of(List.of(c)), Map.of("w", holes), opts));
    assertEquals("w", e.source());
  }
}
