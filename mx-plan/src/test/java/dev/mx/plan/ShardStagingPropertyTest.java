package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.TransportCosts;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

/**
 * Shard bounding on random layouts, executed for real: the generator of {@link PlannerPropertyTest}
 * (random uneven grids over any axes, replicas raw or merged, random view chains into fused
 * parameters, dtype changes, unplannable copies) plus copies that are no box of their source
 * ({@code flatten}), planned in {@code shard} mode with random costs and extra-wire bounds so that
 * every option wins sometimes. Each plan runs through the {@code mem} transport (staged shards
 * replayed locally) and every element is compared with a naive gather; the staged copies never
 * write one element twice. A failure names the case seed.
 */
class ShardStagingPropertyTest {
  private static final long SEED = 0x6d78_7368_6172L; // "mxshar"
  private static final int CASES = 2000;
  private static final String CASE_SEED_PROPERTY = "mx.test.shardCaseSeed";
  private static final double[] DESCRIPTOR_US = {0.001, 0.1, 1.5, 50, 1000};
  private static final double[] RATIOS = {0, 0.5, 1, 100};

  private record Flat(RecordedCopy copy, GlobalTensor tensor) {}

  private final ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
  private final Map<String, Integer> tally = new HashMap<>();

  @Test
  void randomShardBoundedPlansReconstructEveryElement() {
    String only = System.getProperty(CASE_SEED_PROPERTY);
    SplittableRandom master = new SplittableRandom(SEED);
    for (int c = 0; c < CASES; c++) {
      long caseSeed = only != null ? Long.parseLong(only) : master.nextLong();
      try {
        runCase(caseSeed);
      } catch (Throwable t) {
        throw new AssertionFailedError(
            "shard staging property case seed "
                + caseSeed
                + " (master seed "
                + SEED
                + ", case "
                + c
                + "; rerun alone with -D"
                + CASE_SEED_PROPERTY
                + "="
                + caseSeed
                + "): "
                + t,
            t);
      }
      if (only != null) {
        return;
      }
    }
    System.out.println("shard staging property cases: " + new java.util.TreeMap<>(tally));
    for (String path :
        List.of(
            "exact",
            "shard_staging",
            "full_pull",
            "replay_only",
            "convert",
            "fallback",
            "merged",
            "multi_shard_staging",
            "bound_rejected")) {
      assertTrue(
          tally.getOrDefault(path, 0) > 20,
          "path " + path + " reached only " + tally.get(path) + " times");
    }
  }

  private void count(String path, boolean reached) {
    if (reached) {
      tally.merge(path, 1, Integer::sum);
    }
  }

  private void runCase(long caseSeed) {
    SplittableRandom r = new SplittableRandom(caseSeed);
    try (MemExecution x = new MemExecution()) {
      Map<String, GlobalTensor> tensors = new LinkedHashMap<>();
      Map<String, SourceInfo> raw = PlannerPropertyTest.randomSources(x, tensors, r);
      int nSources = tensors.size();
      boolean merged = r.nextBoolean();
      Map<String, SourceInfo> sources = merged ? PlannerPropertyTest.merge(raw) : raw;
      count("merged", merged);

      List<PlannerPropertyTest.Case> cases = new ArrayList<>();
      List<Flat> flats = new ArrayList<>();
      List<RecordedCopy> copies = new ArrayList<>();
      Map<String, Long> paramSize = new LinkedHashMap<>();
      Map<String, DType> paramType = new HashMap<>();
      int nCopies = 1 + r.nextInt(5);
      for (int i = 0; i < nCopies; i++) {
        String src = "src" + r.nextInt(nSources);
        GlobalTensor t = tensors.get(src);
        if (t.shape().rank() >= 2 && r.nextInt(8) == 0) {
          // a dim-merging view: no box of the source, so no per-shard cut; replayed from a
          // whole-source pull
          DType to =
              r.nextInt(3) == 0 ? (t.dtype() == DType.F64 ? DType.I64 : DType.F64) : t.dtype();
          String param = "flat" + i;
          long n = t.shape().numel();
          RecordedCopy c =
              RecordedCopy.contiguous(
                  src, List.of(OpSpec.of("flatten")), param, 0, Shape.of(n), to);
          flats.add(new Flat(c, t));
          copies.add(c);
          paramSize.put(param, n);
          paramType.put(param, to);
          continue;
        }
        PlannerPropertyTest.Case k = PlannerPropertyTest.randomCopy(t, i, paramSize, paramType, r);
        cases.add(k);
        copies.add(k.copy());
      }
      Set<String> failing = new HashSet<>();
      for (PlannerPropertyTest.Case k : cases) {
        if (!k.plannable()) {
          failing.add(k.copy().srcName());
        }
      }
      TransportCosts costs =
          new TransportCosts(
              DESCRIPTOR_US[r.nextInt(DESCRIPTOR_US.length)] * 1e-6,
              (1 + r.nextInt(40)) * 1e9,
              (1 + r.nextInt(20)) * 1e9);
      double ratio = RATIOS[r.nextInt(RATIOS.length)];
      PlanOptions options =
          PlanOptions.fromSettings(BoundingMode.SHARD, Settings.of(Map.of(), Map.of()))
              .withCosts(costs)
              .withMaxExtraWireRatio(ratio);
      CaptureResult capture = CaptureResult.of(copies);
      TransferPlan plan = planner.plan(capture, sources, options);

      assertEquals(BoundingMode.SHARD, plan.bounding());
      assertEquals(
          List.copyOf(PlannerPropertyTest.orderedFailing(cases, failing)),
          plan.fallback(),
          "fallback");
      assertEquals(
          PlannerPropertyTest.expectedExactBytes(cases, failing, sources),
          plan.exactBytes(),
          "exact bytes");
      assertEquals(List.of(), plan.unboundedSources(), "shard mode leaves no source unbounded");
      Set<String> planned = new HashSet<>();
      for (RecordedCopy c : copies) {
        if ((!failing.contains(c.srcName()) && sources.get(c.srcName()).dtype() == c.destDtype())
            || (flats.stream().anyMatch(f -> f.copy == c) && !failing.contains(c.srcName()))) {
          planned.add(c.srcName());
        }
      }
      for (String s : planned) {
        BoundingDecision d = plan.decision(s);
        assertNotNull(d, "decision for " + s);
        BoundingDecision.OptionCost won = d.cost(d.chosen());
        assertTrue(won.feasible(), d.reason());
        for (BoundingDecision.OptionCost o : d.options()) {
          if (o.feasible()) {
            assertTrue(won.seconds() <= o.seconds() * (1 + 1e-9), "the cheapest option wins: " + d);
          }
          if (o.option() != BoundingDecision.Option.EXACT
              && o.feasible()
              && o.wireBytes() > 0
              && won.option() != o.option()
              && d.cost(BoundingDecision.Option.EXACT).feasible()) {
            assertTrue(
                o.wireBytes()
                    <= (1 + ratio) * d.cost(BoundingDecision.Option.EXACT).wireBytes() + 1,
                "bounded: " + d);
          }
        }
        count(d.chosen().label(), true);
        count(
            "bound_rejected",
            d.options().stream()
                .anyMatch(o -> o.rejected() != null && o.rejected().contains("bound")));
      }
      count("replay_only", flats.stream().anyMatch(f -> !failing.contains(f.copy.srcName())));
      count("convert", !plan.converts().isEmpty());
      count("fallback", !plan.fallback().isEmpty());
      count(
          "multi_shard_staging",
          plan.stagedShards().stream()
              .map(StagedShard::srcName)
              .distinct()
              .anyMatch(
                  s ->
                      plan.stagedShards().stream().filter(z -> z.srcName().equals(s)).count() > 1));
      long expectedDescriptors =
          plan.segments().size()
              + plan.stagedShards().size()
              + plan.fullPulls().stream().mapToLong(f -> f.segments().size()).sum()
              + plan.converts().stream().mapToLong(c -> c.segments().size()).sum();
      assertEquals(expectedDescriptors, plan.descriptorCount());

      paramSize.forEach((p, n) -> x.param(p, n, paramType.get(p)));
      x.execute(plan);
      Map<String, Long> caseParams = new LinkedHashMap<>(paramSize);
      flats.forEach(f -> caseParams.remove(f.copy.paramName()));
      PlannerPropertyTest.verify(x, cases, failing, tensors, caseParams, "shard plan");
      for (Flat f : flats) {
        if (failing.contains(f.copy.srcName())) {
          continue;
        }
        for (long j = 0; j < f.tensor.shape().numel(); j++) {
          long got = x.get(f.copy.paramName(), j);
          if (got != f.tensor.value(j)) {
            throw new AssertionFailedError(
                "flattened '"
                    + f.copy.srcName()
                    + "' element "
                    + j
                    + " is "
                    + got
                    + ", the naive gather says "
                    + f.tensor.value(j));
          }
        }
      }
      checkStagedWritesOnce(plan, paramSize);
    }
  }

  /**
   * No destination element is written by two staged copies; every staged copy stays inside its
   * shard.
   */
  private static void checkStagedWritesOnce(TransferPlan plan, Map<String, Long> paramSize) {
    Map<String, int[]> hits = new HashMap<>();
    for (StagedShard st : plan.stagedShards()) {
      assertEquals(
          StagedShard.stagingName(st.srcName(), st.shardIndex()), st.segment().paramName());
      assertEquals(0, st.segment().dstByte());
      for (RecordedCopy c : st.copies()) {
        long[] shape = c.destShape().dims();
        long[] stride = c.destStride();
        int[] h = hits.computeIfAbsent(c.paramName(), p -> new int[paramSize.get(p).intValue()]);
        long n = c.destShape().numel();
        long[] idx = new long[shape.length];
        for (long e = 0; e < n; e++) {
          long off = c.destOffset();
          for (int d = 0; d < shape.length; d++) {
            off += idx[d] * stride[d];
          }
          if (++h[(int) off] > 1) {
            throw new AssertionFailedError(
                "staged copies write element " + off + " of '" + c.paramName() + "' twice");
          }
          for (int d = shape.length - 1; d >= 0; d--) {
            if (++idx[d] < shape[d]) {
              break;
            }
            idx[d] = 0;
          }
        }
      }
    }
    for (FullPullSource f : plan.fullPulls()) {
      assertTrue(
          plan.decision(f.srcName()) != null, "full pull of " + f.srcName() + " has a decision");
    }
  }
}
