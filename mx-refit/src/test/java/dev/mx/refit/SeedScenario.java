package dev.mx.refit;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.ParamSpec;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The plan of seed 000 (the fused-wire test), over real publishers: {@code exact} is read straight
 * into its receive buffer, {@code strided} is a whole 4x4 source staged and re-sliced to its first
 * two columns, and {@code router} is served bf16 for an f32 destination, so it stages at bf16 and
 * is cast afterwards.
 */
final class SeedScenario {
  static final int EL = 4;

  final MemorySegment exactSrc;
  final MemorySegment stridedSrc;
  final MemorySegment routerSrc;
  final Map<String, SourceInfo> sources = new LinkedHashMap<>();
  final Capture capture;
  final TransferPlan plan;

  SeedScenario(TestCluster cluster) {
    this(cluster, true);
  }

  /**
   * With {@code allGroups} false the plan keeps only the exact segment (empty full-pull and convert
   * groups).
   */
  SeedScenario(TestCluster cluster, boolean allGroups) {
    exactSrc = cluster.tensor("s0", DType.F32, TestCluster.arange(0, 8));
    stridedSrc = cluster.tensor("s1", DType.F32, TestCluster.arange(100, 116));
    routerSrc = cluster.tensor("s2", DType.BF16, TestCluster.arange(200, 204));
    sources.put("exact", source(Shape.of(8), DType.F32, "s0", exactSrc));
    sources.put("strided", source(Shape.of(4, 4), DType.F32, "s1", stridedSrc));
    sources.put("router", source(Shape.of(4), DType.BF16, "s2", routerSrc));

    RecordedCopy exactCopy =
        RecordedCopy.contiguous("exact", List.of(), "exact", 0, Shape.of(8), DType.F32);
    // Take the first two columns, the shape a tensor-parallel row split produces.
    RecordedCopy stridedCopy =
        new RecordedCopy(
            "strided",
            List.of(OpSpec.narrow(1, 0, 2)),
            "strided",
            0,
            Shape.of(4, 2),
            new long[] {2, 1},
            DType.F32);
    RecordedCopy routerCopy =
        RecordedCopy.contiguous("router", List.of(), "router", 0, Shape.of(4), DType.F32);
    Map<String, ParamSpec> layout = new LinkedHashMap<>();
    layout.put("exact", new ParamSpec(Shape.of(8), DType.F32));
    if (allGroups) {
      layout.put("strided", new ParamSpec(Shape.of(4, 2), DType.F32));
      layout.put("router", new ParamSpec(Shape.of(4), DType.F32));
    }
    // Without the other groups the engine loads only 'exact', so the element coverage gate holds.
    capture =
        new Capture(
            CaptureResult.of(
                allGroups ? List.of(exactCopy, stridedCopy, routerCopy) : List.of(exactCopy)),
            layout);

    List<PullSegment> exact =
        List.of(new PullSegment("s0", exactSrc.address(), "exact", 0, 8 * EL));
    List<FullPullSource> full =
        List.of(
            new FullPullSource(
                "strided",
                Shape.of(4, 4),
                DType.F32,
                EL,
                List.of(new PullSegment("s1", stridedSrc.address(), "strided", 0, 16 * EL)),
                List.of(stridedCopy)));
    List<ConvertSource> converts =
        List.of(
            new ConvertSource(
                "router",
                Shape.of(4),
                DType.BF16,
                List.of(new PullSegment("s2", routerSrc.address(), "router", 0, 4 * 2))));
    plan =
        new TransferPlan(
            exact,
            List.of(),
            allGroups ? converts : List.of(),
            allGroups ? full : List.of(),
            List.of(),
            1,
            8 * EL,
            Map.of());
  }

  private static SourceInfo source(Shape shape, DType dtype, String session, MemorySegment seg) {
    return new SourceInfo(
        shape,
        dtype,
        List.of(
            new Shard(
                new long[shape.rank()], shape, session, seg.address(), dtype.elementSize(), null)));
  }

  /**
   * Test double: a planner that returns the seed's fixed plan, as the seed sets it on its harness.
   */
  PlanBuilder fixedPlanner() {
    return (c, s, max) -> plan;
  }

  /** Test double: a geometry source that returns the seed's fixed capture. */
  GeometrySource geometry() {
    return manifest -> capture;
  }

  /**
   * The sources as published now: every shard carries the digest of its publisher's current bytes.
   */
  DiscoveredSources discovered(TestCluster cluster) {
    return new DiscoveredSources(withDigests(), cluster.peerMetadata());
  }

  /** The sources as a publisher without digests would publish them. */
  DiscoveredSources discoveredWithoutDigests(TestCluster cluster) {
    return new DiscoveredSources(sources, cluster.peerMetadata());
  }

  /** The sources with every shard carrying the digest of its publisher's current bytes. */
  Map<String, SourceInfo> withDigests() {
    Map<String, MemorySegment> bytes =
        Map.of("exact", exactSrc, "strided", stridedSrc, "router", routerSrc);
    Map<String, SourceInfo> out = new LinkedHashMap<>();
    sources.forEach(
        (name, info) ->
            out.put(
                name,
                new SourceInfo(
                    info.globalShape(),
                    info.dtype(),
                    info.shards().stream()
                        .map(sh -> sh.withDigest(dev.mx.digest.ShardDigest.digest(bytes.get(name))))
                        .toList())));
    return out;
  }
}
