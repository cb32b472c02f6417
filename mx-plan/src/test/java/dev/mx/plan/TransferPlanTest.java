package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PlanBuilderProvider;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ModelExpress (ARCHITECTURE §7.9) {@code test_reshard_refit_transfer.py}: {@code plan_transfer},
 * bounding, converts, fallback.
 */
class TransferPlanTest {
  private static final Shape G = Shape.of(4, 8);
  private final ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));

  private static Shard shard(long[] offset, Shape shape, String session, long addr) {
    return new Shard(offset, shape, session, addr, 4, null);
  }

  private static SourceInfo whole(long addr) {
    return new SourceInfo(G, DType.F32, List.of(shard(new long[] {0, 0}, G, "a", addr)));
  }

  private static RecordedCopy col(String src, String param, long start) {
    return RecordedCopy.contiguous(
        src, List.of(OpSpec.narrow(1, start, 4)), param, 0, Shape.of(4, 4), DType.F32);
  }

  @Test
  void capturePlanPullEqualsTheLoaderGroundTruth() {
    // a column-parallel and a row-parallel parameter of a TP=2 receiver, rank 1, from two
    // publishers
    try (MemExecution x = new MemExecution()) {
      GlobalTensor qw = new GlobalTensor("q.weight", G, DType.F32, 1);
      GlobalTensor ow = new GlobalTensor("o.weight", G, DType.F32, 2);
      Map<String, SourceInfo> sources =
          Map.of(
              "q.weight",
                  x.source(
                      qw,
                      List.of("t0", "t1"),
                      List.of(new long[][] {{0, 0}, {2, 8}}, new long[][] {{2, 0}, {2, 8}})),
              "o.weight",
                  x.source(
                      ow,
                      List.of("t0", "t1"),
                      List.of(new long[][] {{0, 0}, {4, 4}}, new long[][] {{0, 4}, {4, 4}})));
      List<RecordedCopy> copies =
          List.of(
              RecordedCopy.contiguous(
                  "q.weight", List.of(OpSpec.narrow(0, 2, 2)), "q", 0, Shape.of(2, 8), DType.F32),
              RecordedCopy.contiguous(
                  "o.weight", List.of(OpSpec.narrow(1, 4, 4)), "o", 0, Shape.of(4, 4), DType.F32));
      x.param("q", 16, DType.F32);
      x.param("o", 16, DType.F32);
      TransferPlan plan = planner.plan(CaptureResult.of(copies), sources, 64);
      assertEquals(List.of(), plan.fallback());
      // q rows 2..3 are shard t1's whole buffer; o columns 4..7 are shard t1's whole buffer
      assertEquals(2, plan.segments().size());
      assertEquals(128, plan.bytesPlanned());
      x.execute(plan);
      for (int i = 0; i < 16; i++) {
        assertEquals(qw.value(16 + i), x.get("q", i));
        assertEquals(ow.value((i / 4) * 8 + 4 + i % 4), x.get("o", i));
      }
    }
  }

  @Test
  void stridedDestinationIsFilledExactly() {
    // the copy writes a transposed (strided) destination view of its parameter
    try (MemExecution x = new MemExecution()) {
      GlobalTensor w = new GlobalTensor("w", Shape.of(2, 3), DType.I32, 3);
      SourceInfo src = x.source(w, List.of("a"), List.<long[][]>of(new long[][] {{0, 0}, {2, 3}}));
      RecordedCopy c =
          new RecordedCopy("w", List.of(), "p", 1, Shape.of(2, 3), new long[] {1, 2}, DType.I32);
      x.param("p", 7, DType.I32);
      TransferPlan plan = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", src), 64);
      assertEquals(6, plan.segments().size());
      x.execute(plan);
      assertEquals(0, x.get("p", 0));
      for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 3; k++) {
          assertEquals(w.value(r * 3 + k), x.get("p", 1 + r + 2 * k));
        }
      }
    }
  }

  @Test
  void descriptorHeavyCopyBecomesOneFullPull() {
    TransferPlan plan =
        planner.plan(CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", whole(1000)), 3);
    assertEquals(List.of(), plan.segments());
    assertEquals(1, plan.fullPulls().size());
    FullPullSource f = plan.fullPulls().get(0);
    assertEquals("w", f.srcName());
    assertEquals(List.of(new PullSegment("a", 1000, "w", 0, 128)), f.segments());
    assertEquals(List.of(col("w", "p", 0)), f.copies());
    assertEquals(4, plan.exactDescriptorCount());
    assertEquals(64, plan.exactBytes());
    assertEquals(1, plan.descriptorCount());
    assertEquals(3, plan.descriptorSavings());
    assertEquals(64, plan.extraWireBytes());
    assertEquals(List.of(), plan.unboundedSources());
  }

  @Test
  void thresholdIsStrictlyGreater() {
    TransferPlan plan =
        planner.plan(CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", whole(1000)), 4);
    assertEquals(4, plan.segments().size());
    assertEquals(List.of(), plan.fullPulls());
  }

  @Test
  void fullPullPartitionSortsShardsByRow() {
    SourceInfo src =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                shard(new long[] {3, 0}, Shape.of(1, 8), "c", 9000),
                shard(new long[] {0, 0}, Shape.of(3, 8), "a", 1000)));
    TransferPlan plan =
        planner.plan(CaptureResult.of(List.of(col("w", "p", 4))), Map.of("w", src), 1);
    assertEquals(
        List.of(new PullSegment("a", 1000, "w", 0, 96), new PullSegment("c", 9000, "w", 96, 32)),
        plan.fullPulls().get(0).segments());
  }

  @Test
  void nonDim0ShardsStayExactAndUnbounded() {
    SourceInfo src =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                shard(new long[] {0, 0}, Shape.of(4, 4), "a", 1000),
                shard(new long[] {0, 4}, Shape.of(4, 4), "b", 5000)));
    RecordedCopy c =
        RecordedCopy.contiguous("w", List.of(OpSpec.narrow(0, 0, 4)), "p", 0, G, DType.F32);
    TransferPlan plan = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", src), 2);
    assertEquals(List.of("w"), plan.unboundedSources());
    assertEquals(List.of(), plan.fullPulls());
    assertEquals(8, plan.segments().size());
    assertEquals(8, plan.exactDescriptorCount());
    assertEquals(0, plan.descriptorSavings());
    assertEquals(0, plan.extraWireBytes());
  }

  @Test
  void oneHeavyCopyPullsTheWholeSourceWithAllItsCopies() {
    RecordedCopy light =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.narrow(0, 0, 1)), "p0", 0, Shape.of(1, 8), DType.F32);
    RecordedCopy heavy = col("w", "p1", 4);
    TransferPlan plan =
        planner.plan(CaptureResult.of(List.of(light, heavy)), Map.of("w", whole(1000)), 2);
    assertEquals(List.of(), plan.segments());
    assertEquals(List.of(light, heavy), plan.fullPulls().get(0).copies());
    assertEquals(5, plan.exactDescriptorCount());
    assertEquals(32 + 64, plan.exactBytes());
  }

  @Test
  void dtypeMismatchPlansIntoConvertStaging() {
    RecordedCopy c =
        RecordedCopy.contiguous(
            "w", List.of(OpSpec.narrow(1, 4, 4)), "p", 16, Shape.of(4, 4), DType.F64);
    TransferPlan plan = planner.plan(CaptureResult.of(List.of(c)), Map.of("w", whole(1000)), 1);
    assertEquals(List.of(), plan.segments());
    assertEquals(List.of(), plan.fullPulls(), "converts are never bounded");
    assertEquals(1, plan.converts().size());
    ConvertSource cs = plan.converts().get(0);
    assertEquals("p", cs.paramName());
    assertEquals(Shape.of(4, 4), cs.destShape());
    assertEquals(DType.F32, cs.srcDtype());
    // staging is contiguous (4, 4) at the wire dtype, offset 0 (the copy's dest offset does not
    // apply)
    assertEquals(
        List.of(
            new PullSegment("a", 1000 + 16, "p", 0, 16),
            new PullSegment("a", 1000 + 48, "p", 16, 16),
            new PullSegment("a", 1000 + 80, "p", 32, 16),
            new PullSegment("a", 1000 + 112, "p", 48, 16)),
        cs.segments());
    assertEquals(4, plan.exactDescriptorCount());
    assertEquals(64, plan.exactBytes());
  }

  @Test
  void convertIsCastAfterTheWire() {
    try (MemExecution x = new MemExecution()) {
      GlobalTensor w = new GlobalTensor("w", G, DType.F32, 9);
      SourceInfo src = x.source(w, List.of("a"), List.<long[][]>of(new long[][] {{0, 0}, {4, 8}}));
      RecordedCopy c = RecordedCopy.contiguous("w", List.of(), "p", 0, G, DType.F64);
      x.param("p", 32, DType.F64);
      x.execute(planner.plan(CaptureResult.of(List.of(c)), Map.of("w", src), 64));
      for (int i = 0; i < 32; i++) {
        assertEquals(w.value(i), x.get("p", i));
      }
    }
  }

  @Test
  void unsupportedSourceIsNeverFetchedAndFallbackIsOrderedWithReasons() {
    Map<String, SourceInfo> sources = new LinkedHashMap<>();
    sources.put("good", whole(1000));
    sources.put("bad_op", whole(2000));
    sources.put("captured_bad", whole(3000));
    List<RecordedCopy> copies =
        List.of(
            RecordedCopy.contiguous("captured_bad", List.of(), "p0", 0, G, DType.F32),
            col("bad_op", "p1", 0),
            RecordedCopy.contiguous("missing", List.of(), "p2", 0, G, DType.F32),
            RecordedCopy.contiguous(
                "bad_op", List.of(OpSpec.of("expand", 4L, 8L)), "p1", 0, G, DType.F32),
            col("good", "p3", 0),
            RecordedCopy.contiguous("missing", List.of(), "p4", 0, G, DType.F32));
    CaptureResult capture =
        new CaptureResult(
            copies,
            List.of("captured_bad", "no_reason"),
            0,
            Map.of("captured_bad", "unsupported op 'foo' on lazy 'captured_bad' (chain=[])"));
    TransferPlan plan = planner.plan(capture, sources, 64);
    assertEquals(List.of("captured_bad", "no_reason", "missing", "bad_op"), plan.fallback());
    assertEquals(
        "unsupported op 'foo' on lazy 'captured_bad' (chain=[])",
        plan.fallbackReasons().get("captured_bad"));
    assertEquals(ReshardPlanner.CAUSE_NOT_RECORDED, plan.fallbackReasons().get("no_reason"));
    assertTrue(
        plan.fallbackReasons().get("missing").contains("not published"),
        plan.fallbackReasons().toString());
    assertTrue(
        plan.fallbackReasons().get("bad_op").contains("'expand'"),
        plan.fallbackReasons().toString());
    // only the good source is read; bad_op's first (plannable) copy is dropped with it
    for (PullSegment s : plan.allSegments()) {
      assertTrue(s.srcAddr() >= 1000 && s.srcAddr() + s.nbytes() <= 1128, s.toString());
    }
    assertEquals(4, plan.segments().size());
    assertEquals(4, plan.exactDescriptorCount());
    assertTrue(plan.sessions().contains("a"));
  }

  @Test
  void exactDescriptorsAreWhatExecutionReads() {
    try (MemExecution x = new MemExecution()) {
      GlobalTensor w = new GlobalTensor("w", G, DType.F32, 4);
      SourceInfo src =
          x.source(
              w,
              List.of("a", "b"),
              List.of(new long[][] {{0, 0}, {4, 4}}, new long[][] {{0, 4}, {4, 4}}));
      x.param("p", 32, DType.F32);
      TransferPlan plan =
          planner.plan(
              CaptureResult.of(
                  List.of(RecordedCopy.contiguous("w", List.of(), "p", 0, G, DType.F32))),
              Map.of("w", src),
              64);
      List<ReadDescriptor> exact = ReshardPlanner.exactDescriptors(plan, x::base);
      x.execute(plan);
      assertEquals(exact, x.lastReads());
      assertEquals(8, exact.size());
      for (int i = 0; i < 8; i++) {
        PullSegment s = plan.segments().get(i);
        assertEquals(
            new ReadDescriptor(s.session(), s.srcAddr(), x.base("p") + s.dstByte(), s.nbytes()),
            exact.get(i));
      }
    }
  }

  @Test
  void thresholdComesFromTheEnvironmentAtCallTime() {
    RecordedCopy c = col("w", "p", 0);
    ReshardPlanner fromEnv =
        new ReshardPlanner(Settings.of(Map.of(), Map.of(ReshardPlanner.MAX_SEGMENTS_ENV, "3")));
    assertEquals(3, fromEnv.maxSegmentsPerCopy());
    assertEquals(
        1, fromEnv.plan(CaptureResult.of(List.of(c)), Map.of("w", whole(1000))).fullPulls().size());
    assertEquals(64, planner.maxSegmentsPerCopy());
    ReshardPlanner zero =
        new ReshardPlanner(Settings.of(Map.of(), Map.of(ReshardPlanner.MAX_SEGMENTS_ENV, "0")));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> zero.plan(CaptureResult.of(List.of(c)), Map.of("w", whole(1000))));
    assertTrue(e.getMessage().contains(ReshardPlanner.MAX_SEGMENTS_ENV), e.getMessage());
    assertThrows(
        IllegalArgumentException.class,
        () -> planner.plan(CaptureResult.of(List.of(c)), Map.of("w", whole(1000)), 0));
  }

  @Test
  void malformedShardsAreErrorsNamingSourceAndShard() {
    SourceInfo outside =
        new SourceInfo(G, DType.F32, List.of(shard(new long[] {2, 0}, Shape.of(3, 8), "a", 1000)));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                planner.plan(
                    CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", outside), 64));
    assertTrue(e.getMessage().contains("source 'w' shard #0 (session 'a')"), e.getMessage());
    assertTrue(e.getMessage().contains("outside the global shape"), e.getMessage());

    SourceInfo overlapping =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                shard(new long[] {0, 0}, Shape.of(2, 8), "a", 1000),
                shard(new long[] {1, 0}, Shape.of(3, 8), "b", 5000)));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                planner.plan(
                    CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", overlapping), 64));
    assertTrue(e.getMessage().contains("shards #0 (session 'a'"), e.getMessage());
    assertTrue(e.getMessage().contains("#1 (session 'b'"), e.getMessage());

    SourceInfo wrongElsize =
        new SourceInfo(G, DType.F32, List.of(new Shard(new long[] {0, 0}, G, "a", 1000, 2, null)));
    e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                planner.plan(
                    CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", wrongElsize), 64));
    assertTrue(e.getMessage().contains("element size 2"), e.getMessage());

    // identical replicas overlap legally
    SourceInfo replicas =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                shard(new long[] {0, 0}, G, "a", 1000), shard(new long[] {0, 0}, G, "b", 5000)));
    assertEquals(
        8,
        planner
            .plan(CaptureResult.of(List.of(col("w", "p", 0))), Map.of("w", replicas), 64)
            .segments()
            .size());
  }

  @Test
  void stagedPlanningPullsSourcesWithoutARecoverableCopyWhole() {
    SourceInfo cols =
        new SourceInfo(
            G,
            DType.F32,
            List.of(
                shard(new long[] {0, 0}, Shape.of(4, 4), "a", 1000),
                shard(new long[] {0, 4}, Shape.of(4, 4), "b", 5000)));
    RecordedCopy sliced = col("sliced", "p0", 4);
    RecordedCopy direct = RecordedCopy.contiguous("direct", List.of(), "p1", 0, G, DType.F32);
    TransferPlan plan =
        planner.planStaged(
            CaptureResult.of(List.of(sliced, direct)),
            Map.of("sliced", cols, "direct", whole(9000)));
    assertEquals(List.of(new PullSegment("a", 9000, "p1", 0, 128)), plan.segments());
    assertEquals(1, plan.fullPulls().size());
    FullPullSource f = plan.fullPulls().get(0);
    assertEquals("sliced", f.srcName());
    assertEquals(List.of(sliced), f.copies());
    // an identity copy over column shards: four rows of 16 bytes from each
    assertEquals(8, f.segments().size());
    assertEquals(new PullSegment("b", 5000, "sliced", 16, 16), f.segments().get(4));
    // exact baseline: the direct copy (1 run) plus what the slice would have cost (shard b whole, 1
    // run)
    assertEquals(1 + 1, plan.exactDescriptorCount());
    assertEquals(128 + 64, plan.exactBytes());

    SourceInfo holes =
        new SourceInfo(G, DType.F32, List.of(shard(new long[] {0, 0}, Shape.of(4, 4), "a", 1000)));
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> planner.planStaged(CaptureResult.of(List.of(sliced)), Map.of("sliced", holes)));
    assertTrue(e.getMessage().startsWith(ReshardPlanner.STAGED_UNRECOVERABLE), e.getMessage());
  }

  @Test
  void stagedPlanningReconstructsThroughTheMemTransport() {
    try (MemExecution x = new MemExecution()) {
      GlobalTensor w = new GlobalTensor("w", G, DType.F32, 11);
      SourceInfo src =
          x.source(
              w,
              List.of("a", "b"),
              List.of(new long[][] {{0, 0}, {4, 4}}, new long[][] {{0, 4}, {4, 4}}));
      // a transposed copy of a column slice: replayable locally, and cast to f64 while replaying
      RecordedCopy c =
          RecordedCopy.contiguous(
              "w",
              List.of(OpSpec.narrow(1, 2, 4), OpSpec.of("t")),
              "p",
              0,
              Shape.of(4, 4),
              DType.F64);
      x.param("p", 16, DType.F64);
      TransferPlan plan = planner.planStaged(CaptureResult.of(List.of(c)), Map.of("w", src));
      assertEquals(List.of(), plan.converts());
      x.execute(plan);
      for (int k = 0; k < 4; k++) {
        for (int r = 0; r < 4; r++) {
          assertEquals(w.value(r * 8 + 2 + k), x.get("p", k * 4 + r));
        }
      }
    }
  }

  @Test
  void plannerIsFoundThroughTheProviderRegistry() {
    ProviderRegistry<PlanBuilderProvider> registry =
        ProviderRegistry.load(PlanBuilderProvider.class, "planner", "mx.planner", "MX_PLANNER");
    PlanBuilder b = registry.select().create();
    assertNotNull(b);
    assertEquals(ReshardPlanner.class, b.getClass());
  }

  @Test
  void unsupportedCausesGroupBeforeOnLazy() {
    List<String> reasons = new ArrayList<>();
    for (int e = 0; e < 5; e++) {
      reasons.add("unsupported op 'index_select' on lazy 'experts." + e + ".w' (chain=[])");
    }
    reasons.add("op-chain includes a copy (contiguous())");
    reasons.add("  b cause on lazy 'x'");
    reasons.add("a cause");
    List<UnsupportedCause> top = ReshardPlanner.summarizeUnsupported(reasons, 3);
    assertEquals(
        List.of(
            new UnsupportedCause("unsupported op 'index_select'", 5),
            new UnsupportedCause("a cause", 1),
            new UnsupportedCause("b cause", 1)),
        top);
    assertEquals(4, ReshardPlanner.summarizeUnsupported(reasons, null).size());
    assertEquals("5 x unsupported op 'index_select'", top.get(0).toString());
  }
}
