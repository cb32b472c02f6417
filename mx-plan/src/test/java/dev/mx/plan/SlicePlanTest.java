package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * ModelExpress (ARCHITECTURE §7.9) {@code test_reshard_refit_slice_plan.py}: hand-computed segments
 * of {@code plan_pull}.
 */
class SlicePlanTest {
  private static final Shape G = Shape.of(4, 8);

  private static SourceInfo oneShard(Shape g, long addr) {
    return new SourceInfo(
        g, DType.F32, List.of(new Shard(new long[g.rank()], g, "a", addr, 4, null)));
  }

  private static RecordedCopy copy(
      List<OpSpec> chain, String param, long destOffset, Shape destShape) {
    return RecordedCopy.contiguous("w", chain, param, destOffset, destShape, DType.F32);
  }

  private static PullSegment seg(String session, long src, String param, long dst, long n) {
    return new PullSegment(session, src, param, dst, n);
  }

  @Test
  void columnBlockIsOneRun() {
    // rows 2..3 of a (4, 8) f32 tensor: one contiguous run of 2 x 8 x 4 = 64 bytes from element 16
    List<PullSegment> s =
        ReshardPlanner.planPull(
            copy(List.of(OpSpec.narrow(0, 2, 2)), "p", 0, Shape.of(2, 8)), oneShard(G, 1000));
    assertEquals(List.of(seg("a", 1000 + 16 * 4, "p", 0, 64)), s);
  }

  @Test
  void columnSliceIsOneRunPerRow() {
    // columns 4..7: four runs of 4 elements, source stride 8 elements, destination stride 4
    List<PullSegment> s =
        ReshardPlanner.planPull(
            copy(List.of(OpSpec.narrow(1, 4, 4)), "p", 0, Shape.of(4, 4)), oneShard(G, 1000));
    assertEquals(
        List.of(
            seg("a", 1000 + 4 * 4, "p", 0, 16),
            seg("a", 1000 + 12 * 4, "p", 16, 16),
            seg("a", 1000 + 20 * 4, "p", 32, 16),
            seg("a", 1000 + 28 * 4, "p", 48, 16)),
        s);
  }

  @Test
  void fusedDestinationOffsetShiftsEveryDestinationByte() {
    // the copy lands in a fused parameter at element 24 (e.g. the k band of qkv)
    List<PullSegment> s =
        ReshardPlanner.planPull(
            copy(List.of(OpSpec.narrow(1, 4, 4)), "qkv", 24, Shape.of(4, 4)), oneShard(G, 1000));
    assertEquals(4, s.size());
    for (int r = 0; r < 4; r++) {
      assertEquals((24 + 4 * r) * 4, s.get(r).dstByte());
      assertEquals("qkv", s.get(r).paramName());
    }
  }

  @Test
  void twoShardFanInIsEightRunsInShardOrder() {
    // columns split across two publishers; the whole (4, 8) destination needs 4 runs from each
    SourceInfo src =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                new Shard(new long[] {0, 0}, Shape.of(4, 4), "a", 1000, 4, null),
                new Shard(new long[] {0, 4}, Shape.of(4, 4), "b", 5000, 4, null)));
    List<PullSegment> s = ReshardPlanner.planPull(copy(List.of(), "p", 0, G), src);
    List<PullSegment> expected = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      expected.add(seg("a", 1000 + r * 16, "p", r * 32, 16));
    }
    for (int r = 0; r < 4; r++) {
      expected.add(seg("b", 5000 + r * 16, "p", r * 32 + 16, 16));
    }
    assertEquals(expected, s);
  }

  @Test
  void disjointShardsAreSkipped() {
    SourceInfo src =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                new Shard(new long[] {0, 0}, Shape.of(2, 8), "a", 1000, 4, null),
                new Shard(new long[] {2, 0}, Shape.of(2, 8), "b", 5000, 4, null)));
    List<PullSegment> s =
        ReshardPlanner.planPull(copy(List.of(OpSpec.narrow(0, 3, 1)), "p", 0, Shape.of(1, 8)), src);
    assertEquals(List.of(seg("b", 5000 + 8 * 4, "p", 0, 32)), s);
  }

  @Test
  void rankMismatchIsAnErrorNamingSourceAndShard() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new Shard(new long[] {0}, Shape.of(4, 8), "a", 1000, 4, null));
    assertTrue(e.getMessage().contains("rank"), e.getMessage());
    SourceInfo src =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                new Shard(new long[] {0, 0}, Shape.of(4, 8), "a", 1000, 4, null),
                new Shard(new long[] {0, 0, 0}, Shape.of(1, 4, 8), "b", 5000, 4, null)));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ReshardPlanner.planPull(copy(List.of(), "p", 0, G), src));
    assertTrue(e.getMessage().contains("source 'w' shard #1 (session 'b')"), e.getMessage());
    assertTrue(e.getMessage().contains("rank 3"), e.getMessage());
  }

  @Test
  void getitemSliceResolvesToABox() {
    Shape g = Shape.of(8, 4);
    RecordedCopy c =
        copy(List.of(OpSpec.of("getitem", Arrays.asList(0L, 4L))), "p", 0, Shape.of(4, 4));
    NeededSlice need = SliceResolver.resolve(c, g);
    assertArrayEquals(new long[] {0, 0}, need.box().lo());
    assertArrayEquals(new long[] {4, 4}, need.box().hi());
    assertEquals(
        List.of(seg("a", 1000, "p", 0, 64)), ReshardPlanner.planPull(c, oneShard(g, 1000)));
  }

  @Test
  void transposeResolvesToAPermutedBoxWithReindexedDestStrides() {
    RecordedCopy c = copy(List.of(OpSpec.of("transpose", 0L, 1L)), "p", 0, Shape.of(8, 4));
    NeededSlice need = SliceResolver.resolve(c, G);
    assertArrayEquals(new int[] {1, 0}, need.perm());
    assertArrayEquals(new long[] {0, 0}, need.box().lo());
    assertArrayEquals(new long[] {4, 8}, need.box().hi());
    // destination (8, 4) row-major strides (4, 1) in view order are (1, 4) in source order
    assertArrayEquals(new long[] {1, 4}, need.destStrideSrc());
    List<PullSegment> s = ReshardPlanner.planPull(c, oneShard(G, 1000));
    assertEquals(32, s.size());
    // source element (r, k) goes to destination element (k, r): row-major over the source box
    assertEquals(seg("a", 1000 + 4 * (8 + 3), "p", 4 * (3 * 4 + 1), 4), s.get(8 + 3));
  }

  @Test
  void narrowThenTransposeResolves() {
    RecordedCopy c = copy(List.of(OpSpec.narrow(1, 2, 4), OpSpec.of("t")), "p", 0, Shape.of(4, 4));
    NeededSlice need = SliceResolver.resolve(c, G);
    assertArrayEquals(new long[] {0, 2}, need.box().lo());
    assertArrayEquals(new long[] {4, 6}, need.box().hi());
    RecordedCopy p = copy(List.of(OpSpec.of("permute", 1L, 0L)), "p", 0, Shape.of(8, 4));
    assertArrayEquals(new int[] {1, 0}, SliceResolver.resolve(p, G).perm());
  }

  @Test
  void transposePermuteAndNarrowTransposeAreBitExactThroughTheMemTransport() {
    try (MemExecution x = new MemExecution()) {
      GlobalTensor t = new GlobalTensor("w", G, DType.F32, 7);
      SourceInfo src =
          x.source(
              t,
              List.of("a", "b"),
              List.of(new long[][] {{0, 0}, {2, 8}}, new long[][] {{2, 0}, {2, 8}}));
      List<RecordedCopy> copies =
          List.of(
              copy(List.of(OpSpec.of("transpose", 0L, 1L)), "tp", 0, Shape.of(8, 4)),
              copy(List.of(OpSpec.of("permute", 1L, 0L)), "pm", 0, Shape.of(8, 4)),
              copy(
                  List.of(OpSpec.narrow(1, 2, 4), OpSpec.of("transpose", 1L, 0L)),
                  "nt",
                  0,
                  Shape.of(4, 4)));
      for (RecordedCopy c : copies) {
        x.param(c.paramName(), c.destShape().numel(), DType.F32);
      }
      x.execute(
          new ReshardPlanner()
              .plan(dev.mx.api.plan.CaptureResult.of(copies), java.util.Map.of("w", src), 64));
      for (int k = 0; k < 8; k++) {
        for (int r = 0; r < 4; r++) {
          assertEquals(t.value(r * 8 + k), x.get("tp", k * 4 + r));
          assertEquals(t.value(r * 8 + k), x.get("pm", k * 4 + r));
        }
      }
      for (int k = 0; k < 4; k++) {
        for (int r = 0; r < 4; r++) {
          assertEquals(t.value(r * 8 + 2 + k), x.get("nt", k * 4 + r));
        }
      }
    }
  }

  @Test
  void dimMergingReshapeIsUnsupported() {
    // (2, 3, 4) viewed as (6, 4, 1): rank kept, but dim 0 merges two source dims
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.of("reshape", 6L, 4L, 1L)), "p", 0, Shape.of(6, 4, 1), DType.F32);
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class, () -> SliceResolver.resolve(c, Shape.of(2, 3, 4)));
    assertEquals("w", e.source());
    // a merge that changes the rank is refused as a rank change
    RecordedCopy flat = copy(List.of(OpSpec.of("view", -1L)), "p", 0, Shape.of(32));
    e = assertThrows(UnsupportedReshardException.class, () -> SliceResolver.resolve(flat, G));
    assertTrue(e.getMessage().contains("rank"), e.getMessage());
  }

  @Test
  void transposeThenContiguousIsUnsupportedAsACopy() {
    RecordedCopy c =
        copy(
            List.of(OpSpec.of("transpose", 0L, 1L), OpSpec.of("contiguous")),
            "p",
            0,
            Shape.of(4, 4));
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class, () -> SliceResolver.resolve(c, Shape.of(4, 4)));
    assertTrue(e.getMessage().contains("op-chain includes a copy"), e.getMessage());
  }

  @Test
  void intIndexChangesRankAndIsUnsupported() {
    RecordedCopy c = copy(List.of(OpSpec.of("getitem", 1L)), "p", 0, Shape.of(8));
    UnsupportedReshardException e =
        assertThrows(UnsupportedReshardException.class, () -> SliceResolver.resolve(c, G));
    assertTrue(e.getMessage().contains("changes the rank from 2 to 1"), e.getMessage());
  }

  @Test
  void dtypeMismatchIsUnsupportedForPlanPull() {
    RecordedCopy c = RecordedCopy.contiguous("w", List.of(), "p", 0, G, DType.BF16);
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class, () -> ReshardPlanner.planPull(c, oneShard(G, 1000)));
    assertTrue(e.getMessage().startsWith("conversion required"), e.getMessage());
  }

  @Test
  void destinationShapeMustEqualTheViewShape() {
    RecordedCopy c = copy(List.of(OpSpec.narrow(0, 0, 2)), "p", 0, Shape.of(2, 4));
    UnsupportedReshardException e =
        assertThrows(UnsupportedReshardException.class, () -> SliceResolver.resolve(c, G));
    assertTrue(e.getMessage().contains("has shape [2, 4]"), e.getMessage());
  }

  @Test
  void unitDimsTakeUnusedSourceDimsInOrder() {
    // (4, 1, 8): row 2 kept as a size-1 dim via narrow, then dims 0 and 1 swapped
    Shape g = Shape.of(4, 1, 8);
    RecordedCopy c =
        copy(
            List.of(OpSpec.narrow(0, 2, 1), OpSpec.of("transpose", 0L, 1L)),
            "p",
            0,
            Shape.of(1, 1, 8));
    NeededSlice need = SliceResolver.resolve(c, g);
    assertArrayEquals(new int[] {0, 1, 2}, need.perm());
    assertArrayEquals(new long[] {2, 0, 0}, need.box().lo());
    assertArrayEquals(new long[] {3, 1, 8}, need.box().hi());
    assertEquals(
        List.of(seg("a", 1000 + 16 * 4, "p", 0, 32)),
        ReshardPlanner.planPull(c, oneShard(g, 1000)));
  }
}
