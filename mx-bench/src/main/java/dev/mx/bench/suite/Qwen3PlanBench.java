package dev.mx.bench.suite;

import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.layout.PlanningInventory;
import dev.mx.plan.ReshardPlanner;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * P4 on a real model: plan the Qwen3-30B-A3B inventory (mx-layout's Megatron EP=8 trainer → vLLM
 * TP=8, rank 3) and build every descriptor, single-threaded, against the 0.5 s target (reported as
 * plans per second).
 */
public final class Qwen3PlanBench implements Benchmark {
  private static final int RANK = 3;

  /** Any base address per destination: descriptor building only adds offsets to it. */
  private static final long BASE = 1L << 44;

  private static volatile long sink;

  @Override
  public String name() {
    return "plan-qwen3";
  }

  @Override
  public String description() {
    return "planner P4 on the real Qwen3-30B-A3B inventory, trainer EP=8 -> inference TP=8 (target <= 0.5 s)";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    long t = System.nanoTime();
    PlanningInventory inv = PlanningInventory.qwen3MoeEp8ToTp8(RANK);
    ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
    TransferPlan once =
        planner.plan(
            inv.capture().result(), inv.sources(), ReshardPlanner.DEFAULT_MAX_SEGMENTS_PER_COPY);
    options
        .progress()
        .printf(
            Locale.ROOT,
            "plan-qwen3: inventory of %d sources, %d shards, %d copies built in %.2f s; %d descriptors, %d full pulls, "
                + "%d converts, %d fallback, %.1f GB planned%n",
            inv.sources().size(),
            inv.shardCount(),
            inv.copyCount(),
            (System.nanoTime() - t) / 1e9,
            once.descriptorCount(),
            once.fullPulls().size(),
            once.converts().size(),
            once.fallback().size(),
            once.bytesPlanned() / 1e9);
    double seconds =
        Measure.medianSeconds(
            2, options.repetitions(), () -> sink += planAndDescribe(planner, inv));
    return List.of(
        new BenchResult(
            "p4_qwen3_30b_a3b_plans_per_s",
            1 / seconds,
            "plans/s",
            "p4_target_plans_per_s",
            1 / PlanBench.P4_TARGET_SECONDS));
  }

  private static long planAndDescribe(ReshardPlanner planner, PlanningInventory inv) {
    return describe(
        planner.plan(
            inv.capture().result(), inv.sources(), ReshardPlanner.DEFAULT_MAX_SEGMENTS_PER_COPY));
  }

  /** Builds every descriptor of {@code plan} (exact, full pulls, converts); returns how many. */
  static long describe(TransferPlan plan) {
    long n = ReshardPlanner.exactDescriptors(plan, p -> BASE).size();
    for (FullPullSource f : plan.fullPulls()) {
      n += ReshardPlanner.descriptors(f.segments(), s -> BASE).size();
    }
    for (ConvertSource c : plan.converts()) {
      n += ReshardPlanner.descriptors(c.segments(), p -> BASE).size();
    }
    return n;
  }
}
