package dev.mx.bench.suite;

import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.cli.bench.ScaleSpec;
import dev.mx.layout.vllm.Fp8BlockLayout;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.merge.MergedSources;
import dev.mx.plan.merge.ReplicaMerge;
import dev.mx.refit.stage.SourceChecks;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * {@code mx bench scale}: a trillion-parameter refit's control plane and planning, simulated on one
 * host. Every trainer rank and every inference rank of the chosen topologies (default Kimi-K2, 256
 * Megatron ranks → 128 vLLM ranks) is a thread: trainers publish their real shard tables (real
 * layouts, the real codec, made-up addresses: no weight bytes exist) through the real version
 * protocol, into a real {@code redis-server} the bench starts ({@code --control-plane redis}) or
 * through a real RefitService server that keeps only shard records while each trainer rank serves
 * its own table ({@code --control-plane mx}); receivers discover, lease, fetch and release. Then
 * the real planner plans every inference rank from the merged tables. Reported: per control-plane
 * phase the p50/p99 latency per participant and the central service's calls and bytes per
 * participant, at 1/8, 1/4, 1/2 and all of the ranks; planning time per inference rank and for all;
 * descriptors and bytes per inference rank; and a what-if model of one refit's wire time on a
 * stated fabric beside the measured control-plane time.
 */
public final class ScaleBench implements Benchmark {
  /** The issue's goals. */
  static final double PLAN_ONE_RANK_GOAL_S = 0.2;

  static final double CONTROL_PLANE_P99_GOAL_MS = 100;

  /** Bytes served by the busiest trainer rank over the mean, with replica spreading. */
  static final double SERVING_BALANCE_GOAL = 1.25;

  /** Perplexity's reported Kimi-K2 256 → 128 refit time. */
  static final double PERPLEXITY_KIMI_K2_S = 1.3;

  /** The block of the fp8-block projection: vLLM's and DeepSeek-V3's 128. */
  private static final int FP8_BLOCK = 128;

  /** The default tile size of tile digests ({@code mx.publish.tile-bytes}), for the table model. */
  private static final long TILE_BYTES = 64 * 1024;

  @Override
  public String name() {
    return "scale";
  }

  @Override
  public String description() {
    return "simulated 256 -> 128 Kimi-K2 control plane against a real redis-server (or RefitService, --control-plane mx), planning per rank, wire model";
  }

  @Override
  public void checkUsage(BenchOptions options) {
    ScaleScenario.of(options.scale());
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    ScaleSpec spec = options.scale();
    ScaleScenario full = ScaleScenario.of(spec);
    PrintStream progress = options.progress();
    List<Integer> divisors = new ArrayList<>(spec.fractions());
    divisors.add(1);
    List<BenchResult> out = new ArrayList<>();
    List<ScaleControlPlane.Result> growth = new ArrayList<>();
    List<byte[]> fullTables = new ArrayList<>();
    ScaleControlPlane.Alone alone = null;
    double fetchServingMs = 0;
    String fetchServingLabel;
    String cost;
    boolean scaleOut;
    try (ControlPlaneBackend backend = open(spec);
        ScaleControlPlane plane = new ScaleControlPlane(backend)) {
      fetchServingLabel = backend.fetchServingLabel();
      cost = backend.costName();
      scaleOut = backend.phasesScaleOut();
      progress.println("scale: " + backend.describe() + "; " + full.model());
      for (int d : divisors) {
        Optional<ScaleScenario> s = full.scaled(d);
        if (s.isEmpty()) {
          progress.println(
              "scale: 1/" + d + " of " + full.label() + " does not divide the model: skipped");
          continue;
        }
        List<ScaleScenario.RankTensors> tensors = s.get().publishedTensors();
        List<byte[]> last = new ArrayList<>();
        try {
          // One warm-up step, at the smallest rank count, warms the JIT for every later one.
          growth.add(plane.run(s.get(), tensors, spec.steps(), growth.isEmpty(), last, progress));
          if (d == 1) {
            fullTables = last;
            alone = plane.alone(s.get(), tensors, 3);
            byte[] largest =
                last.stream().max(java.util.Comparator.comparingInt(t -> t.length)).orElseThrow();
            fetchServingMs =
                backend.fetchServingMs(
                    growth.getLast().phases().get("fetch").serverMs(),
                    largest,
                    s.get().inferenceRanks());
          }
        } catch (RuntimeException e) {
          throw backend.explain(e);
        }
      }
    }
    for (ScaleControlPlane.Result r : growth) {
      out.addAll(controlPlaneResults(r, r.scenario() == full, cost));
    }
    printGrowth(progress, growth, cost);
    Planning planning = plan(full, fullTables, progress);
    out.addAll(planning.results());
    ScaleControlPlane.Result fullPlane = growth.getLast();
    if (alone == null) {
      throw new IllegalStateException("the full topology " + full.label() + " was not run");
    }
    out.add(none("cp_publish_one_trainer_alone_ms" + suffix(full), alone.publishMs(), "ms"));
    out.add(none("cp_discover_one_receiver_alone_ms" + suffix(full), alone.discoverMs(), "ms"));
    out.add(none("cp_lease_one_receiver_alone_ms" + suffix(full), alone.leaseMs(), "ms"));
    out.add(none("cp_fetch_one_receiver_alone_ms" + suffix(full), alone.fetchMs(), "ms"));
    out.add(none("cp_fetch_serving_ms" + suffix(full), fetchServingMs, "ms"));
    out.add(
        none(
            "cp_central_ms_per_call_alone" + suffix(full),
            ScaleControlPlane.Alone.perCallMs(
                alone
                    .publishCost()
                    .plus(alone.discoverCost())
                    .plus(alone.leaseCost())
                    .plus(alone.fetchCost())),
            "ms"));
    out.addAll(
        model(
            full,
            spec,
            planning,
            fullPlane,
            new Bounds(alone, fetchServingMs, fetchServingLabel, scaleOut),
            fullTables,
            progress));
    return out;
  }

  /**
   * What bounds each control-plane phase at scale, from the measurements ({@link
   * ControlPlaneBackend#phasesScaleOut}).
   *
   * @param alone each phase for one participant alone
   * @param servingMs the busiest table server's time serving every receiver ({@link
   *     ControlPlaneBackend#fetchServingMs})
   */
  record Bounds(
      ScaleControlPlane.Alone alone, double servingMs, String servingLabel, boolean scaleOut) {

    /**
     * Publish, discover or lease at scale: where phases scale out, the longer of one participant
     * alone and the central service serving every participant's calls one after another at the cost
     * per call measured alone (its call times with 384 participants on this host's two cores are
     * mostly waiting for a core, which a cluster's server would not do); else the p99.
     */
    double phaseMs(ScaleControlPlane.PhaseStats p, double aloneMs, ServiceCost aloneCost) {
      if (!scaleOut) {
        return p.p99Ms();
      }
      return Math.max(aloneMs, centralMs(p, aloneCost));
    }

    /** Every participant's calls of the phase at the cost per call of one participant alone. */
    static double centralMs(ScaleControlPlane.PhaseStats p, ServiceCost aloneCost) {
      return p.commandsPerParticipant()
          * p.participants
          * ScaleControlPlane.Alone.perCallMs(aloneCost);
    }

    /** The fetch at scale: one receiver alone, or the busiest table server serving them all. */
    double fetchMs(ScaleControlPlane.PhaseStats p) {
      double bound = Math.max(alone.fetchMs(), servingMs);
      return scaleOut ? Math.max(bound, centralMs(p, alone.fetchCost())) : bound;
    }
  }

  private static ControlPlaneBackend open(ScaleSpec spec) throws Exception {
    return spec.controlPlane().equals(ScaleSpec.MX)
        ? new RefitServiceControlPlane()
        : RedisControlPlane.start();
  }

  private static String suffix(ScaleScenario s) {
    return "@" + s.trainerRanks() + "x" + s.inferenceRanks();
  }

  private static List<BenchResult> controlPlaneResults(
      ScaleControlPlane.Result r, boolean isFull, String cost) {
    List<BenchResult> out = new ArrayList<>();
    String at = suffix(r.scenario());
    for (ScaleControlPlane.PhaseStats p : r.phases().values()) {
      String m = "cp_" + p.name;
      if (isFull) {
        out.add(
            new BenchResult(
                m + "_p99_ms" + at, p.p99Ms(), "ms", "goal_p99_ms", CONTROL_PLANE_P99_GOAL_MS));
      } else {
        out.add(none(m + "_p99_ms" + at, p.p99Ms(), "ms"));
      }
      out.add(none(m + "_p50_ms" + at, p.p50Ms(), "ms"));
      out.add(none(m + "_wall_ms" + at, p.wallMs(), "ms"));
      String c = m + "_" + cost;
      out.add(
          none(
              c + (cost.equals("redis") ? "_cmds" : "_calls") + "_per_participant" + at,
              p.commandsPerParticipant(),
              cost.equals("redis") ? "cmds" : "calls"));
      out.add(none(c + "_bytes_per_participant" + at, p.bytesPerParticipant(), "bytes"));
      out.add(none(c + "_server_ms" + at, p.serverMs(), "ms"));
    }
    out.add(none("cp_step_wall_ms" + at, r.stepWallMs(), "ms"));
    return out;
  }

  private static BenchResult none(String metric, double value, String unit) {
    return new BenchResult(metric, value, unit, "-", 0);
  }

  private static void printGrowth(
      PrintStream progress, List<ScaleControlPlane.Result> growth, String cost) {
    progress.println();
    progress.println(
        cost.equals("redis")
            ? "scale: control plane per step (p50/p99 per participant; Redis commands and bytes"
                + " per participant; commands run inside scripts count):"
            : "scale: control plane per step (p50/p99 per participant; the central RefitService's"
                + " calls and message bytes per participant; tables go worker to worker):");
    progress.printf(
        Locale.ROOT,
        "  %-10s %-9s %6s %9s %9s %9s %10s %8s %12s%n",
        "ranks",
        "phase",
        "who",
        "p50 ms",
        "p99 ms",
        "wall ms",
        cost + " ms",
        cost.equals("redis") ? "cmds" : "calls",
        "bytes");
    for (ScaleControlPlane.Result r : growth) {
      for (ScaleControlPlane.PhaseStats p : r.phases().values()) {
        progress.printf(
            Locale.ROOT,
            "  %-10s %-9s %6d %9.1f %9.1f %9.1f %10.1f %8.1f %12.0f%n",
            r.scenario().trainerRanks() + "x" + r.scenario().inferenceRanks(),
            p.name,
            p.participants,
            p.p50Ms(),
            p.p99Ms(),
            p.wallMs(),
            p.serverMs(),
            p.commandsPerParticipant(),
            p.bytesPerParticipant());
      }
      progress.printf(
          Locale.ROOT,
          "  %-10s %-9s %6s %9s %9s %9.1f%n",
          r.scenario().trainerRanks() + "x" + r.scenario().inferenceRanks(),
          "step",
          "",
          "",
          "",
          r.stepWallMs());
    }
  }

  /**
   * Per inference rank: planning seconds, descriptors, bytes; and bytes read per trainer rank, with
   * replica spreading (as receivers read) and as the owners alone would serve them.
   */
  /**
   * @param fp8Bytes per inference rank, the bytes it would read were the trainers to publish every
   *     linear weight as fp8-block sources (codes at one byte, scales at 4 bytes per 128 x 128
   *     block)
   * @param fp8BytesPerTrainer per trainer rank, the same for the bytes it serves
   */
  record Planning(
      double[] seconds,
      long[] descriptors,
      long[] bytes,
      Map<String, Long> bytesPerTrainer,
      Map<String, Long> bytesPerOwner,
      int trainerRanks,
      double mergeSeconds,
      double warmCheckSeconds,
      long[] fp8Bytes,
      Map<String, Long> fp8BytesPerTrainer) {

    long maxFp8Bytes() {
      return java.util.Arrays.stream(fp8Bytes).max().orElse(0);
    }

    long maxFp8TrainerBytes() {
      return max(fp8BytesPerTrainer);
    }

    double maxSeconds() {
      return java.util.Arrays.stream(seconds).max().orElse(0);
    }

    double totalSeconds() {
      return java.util.Arrays.stream(seconds).sum();
    }

    long maxBytes() {
      return java.util.Arrays.stream(bytes).max().orElse(0);
    }

    long maxTrainerBytes() {
      return max(bytesPerTrainer);
    }

    /** Bytes per trainer rank over every rank of the job (ranks serving nothing count). */
    double meanTrainerBytes() {
      return mean(bytesPerTrainer);
    }

    private static long max(Map<String, Long> bytes) {
      return bytes.values().stream().mapToLong(Long::longValue).max().orElse(0);
    }

    private double mean(Map<String, Long> bytes) {
      return bytes.values().stream().mapToLong(Long::longValue).sum() / (double) trainerRanks;
    }

    List<BenchResult> results() {
      double median = median(seconds);
      return List.of(
          new BenchResult("plan_one_rank_median_s", median, "s", "goal_s", PLAN_ONE_RANK_GOAL_S),
          new BenchResult("plan_one_rank_max_s", maxSeconds(), "s", "goal_s", PLAN_ONE_RANK_GOAL_S),
          none("plan_all_ranks_one_thread_s", totalSeconds(), "s"),
          none("merge_tables_s", mergeSeconds, "s"),
          none("warm_step_checks_s", warmCheckSeconds, "s"),
          none(
              "descriptors_per_inference_rank_max",
              java.util.Arrays.stream(descriptors).max().orElse(0),
              "descriptors"),
          none(
              "descriptors_per_inference_rank_mean",
              java.util.Arrays.stream(descriptors).average().orElse(0),
              "descriptors"),
          none("bytes_per_inference_rank_max", maxBytes(), "bytes"),
          none(
              "bytes_per_inference_rank_mean",
              java.util.Arrays.stream(bytes).average().orElse(0),
              "bytes"),
          none("bytes_per_trainer_rank_max", maxTrainerBytes(), "bytes"),
          none("bytes_per_trainer_rank_mean", meanTrainerBytes(), "bytes"),
          new BenchResult(
              "bytes_per_trainer_rank_busiest_over_mean",
              maxTrainerBytes() / meanTrainerBytes(),
              "x",
              "goal",
              SERVING_BALANCE_GOAL),
          none("bytes_per_trainer_rank_max_owners_only", max(bytesPerOwner), "bytes"),
          none("bytes_per_trainer_rank_mean_owners_only", mean(bytesPerOwner), "bytes"));
    }
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    java.util.Arrays.sort(s);
    return s.length == 0 ? 0 : s[s.length / 2];
  }

  /** Timed repetitions of a receiver's per-step work; the median counts. */
  private static final int WORK_REPS = 3;

  /**
   * Plans every inference rank from the merged tables of the last full-scale step, one at a time on
   * this thread after one untimed warm-up plan, with the descriptors built as P4 does. Also times
   * the work every receiver repeats each step besides the fetch: merging the decoded tables (the
   * median of {@link #WORK_REPS}), and on a warm step, where the plan is kept, spreading its reads
   * over the replicas again and checking the sources still tile and keep the plan's geometry
   * ({@code Receiver}'s rediscovery; the slowest of three ranks' medians).
   */
  static Planning plan(ScaleScenario s, List<byte[]> encoded, PrintStream progress) {
    ShardTableCodec codec = ShardTableCodec.standard();
    List<ShardTable> tables = new ArrayList<>();
    for (byte[] t : encoded) {
      tables.add(codec.decode(t));
    }
    MergedSources merged = null;
    double[] merges = new double[WORK_REPS + 1];
    for (int i = 0; i < merges.length; i++) {
      long m0 = System.nanoTime();
      merged = ReplicaMerge.merge(tables);
      merges[i] = (System.nanoTime() - m0) / 1e9;
    }
    // The first merge also compiles it: a long-running receiver has.
    double mergeSeconds = median(java.util.Arrays.copyOfRange(merges, 1, merges.length));
    Map<String, SourceInfo> sources = merged.sources();
    List<ManifestEntry> manifest = VllmLayout.manifest(s.model(), s.dtype());
    ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
    int n = s.inferenceRanks();
    double[] seconds = new double[n];
    long[] descriptors = new long[n];
    long[] bytes = new long[n];
    long[] fp8Bytes = new long[n];
    Map<String, Long> perTrainer = new HashMap<>();
    Map<String, Long> perOwner = new HashMap<>();
    Map<String, Long> fp8PerTrainer = new HashMap<>();
    // Untimed: the first plan also compiles the planner, which a long-running receiver has done.
    planner.plan(
        new VllmLayout(s.model(), s.inference(), 0, s.dtype()).capture(manifest).result(),
        sources,
        ReshardPlanner.DEFAULT_MAX_SEGMENTS_PER_COPY);
    for (int r = 0; r < n; r++) {
      long t0 = System.nanoTime();
      VllmLayout layout = new VllmLayout(s.model(), s.inference(), r, s.dtype());
      Capture capture = layout.capture(manifest);
      // As a receiver does: each box read from one of its holders, spread over the replicas.
      Map<String, SourceInfo> spread = merged.assignedTo(r);
      TransferPlan plan =
          planner.plan(capture.result(), spread, ReshardPlanner.DEFAULT_MAX_SEGMENTS_PER_COPY);
      descriptors[r] = Qwen3PlanBench.describe(plan);
      seconds[r] = (System.nanoTime() - t0) / 1e9;
      bytes[r] = plan.bytesPlanned();
      OwnerOf owners = new OwnerOf(spread, sources);
      // The parameters vLLM holds block-quantized: fp8-block sources would carry them at half.
      java.util.Set<String> quantized =
          Fp8BlockLayout.defaults(layout, FP8_BLOCK, true).scales().keySet();
      for (PullSegment seg : plan.allSegments()) {
        perTrainer.merge(seg.session(), seg.nbytes(), Long::sum);
        perOwner.merge(owners.of(seg), seg.nbytes(), Long::sum);
        long fp8 =
            quantized.contains(seg.paramName())
                ? seg.nbytes() / 2 + seg.nbytes() / 2 / ((long) FP8_BLOCK * FP8_BLOCK) * 4
                : seg.nbytes();
        fp8Bytes[r] += fp8;
        fp8PerTrainer.merge(seg.session(), fp8, Long::sum);
      }
      if (r == 0 || (r + 1) % 32 == 0) {
        progress.printf(
            Locale.ROOT,
            "scale: planned inference rank %d of %d: %.3f s, %d descriptors, %.2f GB%n",
            r,
            n,
            seconds[r],
            descriptors[r],
            bytes[r] / 1e9);
      }
    }
    double warmChecks = 0;
    for (int r : new int[] {0, n / 2, n - 1}) {
      Map<String, SourceInfo> kept = merged.assignedTo(r);
      double[] reps = new double[WORK_REPS];
      for (int i = 0; i < WORK_REPS; i++) {
        long t0 = System.nanoTime();
        Map<String, SourceInfo> fresh = merged.assignedTo(r);
        SourceChecks.requireTiled(fresh);
        if (!SourceChecks.sameGeometry(kept, fresh)) {
          throw new IllegalStateException("rank " + r + ": the same tables spread differently");
        }
        reps[i] = (System.nanoTime() - t0) / 1e9;
      }
      warmChecks = Math.max(warmChecks, median(reps));
    }
    return new Planning(
        seconds,
        descriptors,
        bytes,
        perTrainer,
        perOwner,
        s.trainerRanks(),
        mergeSeconds,
        warmChecks,
        fp8Bytes,
        fp8PerTrainer);
  }

  /**
   * Which owner would have served a segment read from a replica: the same bytes without replica
   * spreading, with no second plan.
   */
  private static final class OwnerOf {
    private final Map<String, java.util.TreeMap<Long, String>> bySession = new HashMap<>();

    OwnerOf(Map<String, SourceInfo> spread, Map<String, SourceInfo> owners) {
      spread.forEach(
          (name, info) -> {
            List<dev.mx.api.plan.Shard> own = owners.get(name).shards();
            for (int i = 0; i < info.shards().size(); i++) {
              dev.mx.api.plan.Shard chosen = info.shards().get(i);
              bySession
                  .computeIfAbsent(chosen.session(), k -> new java.util.TreeMap<>())
                  .put(chosen.addr(), own.get(i).session());
            }
          });
    }

    String of(PullSegment seg) {
      java.util.TreeMap<Long, String> shards = bySession.get(seg.session());
      Map.Entry<Long, String> e = shards == null ? null : shards.floorEntry(seg.srcAddr());
      return e == null ? seg.session() : e.getValue();
    }
  }

  /** The engine counts the fan-out projection is printed for. */
  static final List<Integer> FAN_OUT_ENGINES = List.of(2, 4, 8);

  /**
   * {@code engines} inference engines of the modelled topology refitting one step: all reading the
   * trainers at once; a chain (engine 0 reads the trainers, engine g reads engine g-1's installed
   * weights, each of its ranks serving exactly the bytes the same rank of the next engine reads, so
   * those refits are bound by the reader); or {@code --serve-installed}'s doubling rounds (every
   * engine holding the step serves one more per round: {@code ceil(log2 engines)} reader-bound
   * rounds after the first). Seconds until the last engine holds the step, and bytes the busiest
   * trainer rank serves (one engine's, for both fan-outs).
   */
  record FanOutProjection(
      int engines,
      double directWireS,
      double directTrainerBytes,
      double chainWireS,
      double doublingWireS,
      double chainTrainerBytes) {
    static FanOutProjection of(
        int engines, double receiverWireS, double trainerWireS, double busiestTrainerBytes) {
      double first = Math.max(receiverWireS, trainerWireS);
      int rounds = 32 - Integer.numberOfLeadingZeros(engines - 1);
      return new FanOutProjection(
          engines,
          Math.max(receiverWireS, engines * trainerWireS),
          engines * busiestTrainerBytes,
          first + (engines - 1) * receiverWireS,
          first + rounds * receiverWireS,
          busiestTrainerBytes);
    }
  }

  /**
   * The what-if model of one refit on a cluster where every participant has its own host and a
   * {@code --fabric-gbps} link: the wire bound by the busiest receiver and the busiest trainer
   * rank; the control plane's critical path from the phases measured here (publish, discover and
   * lease, fetch as {@link Bounds} takes them); a receiver's merge of the tables, then the slowest
   * rank's planning (the first refit) or its warm-step checks (a later one, plan kept).
   */
  private static List<BenchResult> model(
      ScaleScenario s,
      ScaleSpec spec,
      Planning planning,
      ScaleControlPlane.Result plane,
      Bounds bounds,
      List<byte[]> tables,
      PrintStream progress) {
    double bytesPerSecond = spec.fabricGbps() * 1e9 / 8;
    double wireReceivers = planning.maxBytes() / bytesPerSecond;
    double wireTrainers = planning.maxTrainerBytes() / bytesPerSecond;
    double wire = Math.max(wireReceivers, wireTrainers);
    Map<String, ScaleControlPlane.PhaseStats> p = plane.phases();
    ScaleControlPlane.Alone a = bounds.alone();
    double publishMs = bounds.phaseMs(p.get("publish"), a.publishMs(), a.publishCost());
    double discoverMs = bounds.phaseMs(p.get("discover"), a.discoverMs(), a.discoverCost());
    double leaseMs = bounds.phaseMs(p.get("lease"), a.leaseMs(), a.leaseCost());
    double fetchMs = bounds.fetchMs(p.get("fetch"));
    double controlPlane = (publishMs + discoverMs + leaseMs + fetchMs) / 1e3;
    // Every step a receiver merges the tables it fetched; the first also plans, a warm step (the
    // same geometry, new weights) keeps its plan and only spreads and checks again.
    double receiverFirst = planning.mergeSeconds() + planning.maxSeconds();
    double receiverWarm = planning.mergeSeconds() + planning.warmCheckSeconds();
    double refit = wire + controlPlane + receiverFirst;
    double refitWarm = wire + controlPlane + receiverWarm;
    double wireFp8 =
        Math.max(planning.maxFp8Bytes(), planning.maxFp8TrainerBytes()) / bytesPerSecond;
    double refitFp8 = wireFp8 + controlPlane + receiverFirst;
    double refitWarmFp8 = wireFp8 + controlPlane + receiverWarm;
    long tableBytes = tables.stream().mapToLong(t -> t.length).sum();
    long weightBytes = s.model().parameterCount() * s.dtype().elementSize();
    // 32 hex characters and JSON quoting per tile digest of 64 KiB.
    long tileDigestBytes = weightBytes / TILE_BYTES * 35;
    // Replicas are listed without tile digests (receivers use the owner's); were they listed with
    // their own, the tables would carry these too.
    long replicaTileDigestBytes = s.replicaBytes() / TILE_BYTES * 35;
    progress.println();
    progress.printf(
        Locale.ROOT,
        "scale: MODEL, not a measurement: %s bf16 -> bf16, %s, %.0f Gb/s per GPU.%n"
            + "  wire: busiest inference rank reads %.2f GB (%.3f s), busiest trainer rank serves"
            + " %.2f GB (%.3f s)%n"
            + "  control plane (%s): publish %.0f ms + discover %.0f ms + lease %.0f ms +"
            + " fetch %.0f ms (one receiver alone %.0f ms, %s %.0f ms) = %.3f s%n"
            + "  receiver: merging the tables %.3f s, then planning (slowest rank) %.3f s on the"
            + " first step, or on a warm step (plan kept) spreading and checking again %.3f s%n"
            + "  one refit: first %.3f s, warm %.3f s (Perplexity reports %.1f s for Kimi-K2"
            + " 256 -> 128, bf16 -> fp8)%n",
        s.model().modelName(),
        s.label(),
        spec.fabricGbps(),
        planning.maxBytes() / 1e9,
        wireReceivers,
        planning.maxTrainerBytes() / 1e9,
        wireTrainers,
        bounds.scaleOut()
            ? "each phase: one participant alone, or the central service answering every"
                + " participant's calls at its cost per call alone"
            : "p99 under this host's contention; the fetch bounded below",
        publishMs,
        discoverMs,
        leaseMs,
        fetchMs,
        bounds.alone().fetchMs(),
        bounds.servingLabel(),
        bounds.servingMs(),
        controlPlane,
        planning.mergeSeconds(),
        planning.maxSeconds(),
        planning.warmCheckSeconds(),
        refit,
        refitWarm,
        PERPLEXITY_KIMI_K2_S);
    progress.printf(
        Locale.ROOT,
        "  with fp8-block sources (the trainers publish every linear weight as e4m3fn codes and"
            + " 128x128 scales, --trainer-dtype fp8-block): busiest inference rank reads %.2f GB,"
            + " busiest trainer rank serves %.2f GB, wire %.3f s, one refit: first %.3f s, warm"
            + " %.3f s%n",
        planning.maxFp8Bytes() / 1e9,
        planning.maxFp8TrainerBytes() / 1e9,
        wireFp8,
        refitFp8,
        refitWarmFp8);
    progress.printf(
        Locale.ROOT,
        "scale: bytes served per trainer rank: busiest %.2f GB, mean %.2f GB (busiest/mean %.3f)"
            + " with replica spreading; owners alone: busiest %.2f GB, mean %.2f GB%n",
        planning.maxTrainerBytes() / 1e9,
        planning.meanTrainerBytes() / 1e9,
        planning.maxTrainerBytes() / planning.meanTrainerBytes(),
        Planning.max(planning.bytesPerOwner()) / 1e9,
        planning.mean(planning.bytesPerOwner()) / 1e9);
    List<BenchResult> fanOut = new java.util.ArrayList<>();
    for (int engines : FAN_OUT_ENGINES) {
      FanOutProjection f =
          FanOutProjection.of(engines, wireReceivers, wireTrainers, planning.maxTrainerBytes());
      progress.printf(
          Locale.ROOT,
          "scale: %d engines: from the trainers at once, wire %.3f s, busiest trainer rank serves"
              + " %.2f GB; fan-out (--serve-installed, doubling rounds) %.3f s to the last engine"
              + " (a chain %.3f s), busiest trainer rank serves %.2f GB%n",
          engines,
          f.directWireS(),
          f.directTrainerBytes() / 1e9,
          f.doublingWireS(),
          f.chainWireS(),
          f.chainTrainerBytes() / 1e9);
      fanOut.add(none("model_fanout_" + engines + "_direct_wire_s", f.directWireS(), "s"));
      fanOut.add(none("model_fanout_" + engines + "_chain_wire_s", f.chainWireS(), "s"));
      fanOut.add(none("model_fanout_" + engines + "_doubling_wire_s", f.doublingWireS(), "s"));
      fanOut.add(
          none(
              "model_fanout_" + engines + "_direct_busiest_trainer_bytes",
              f.directTrainerBytes(),
              "bytes"));
    }
    progress.printf(
        Locale.ROOT,
        "scale: every receiver reads all %d tables, %.1f MB (whole-shard digests only); tile"
            + " digests at the default 64 KiB would add about %.0f MB (replicas list none: %.0f MB"
            + " more if each listed its own)%n",
        tables.size(),
        tableBytes / 1e6,
        tileDigestBytes / 1e6,
        replicaTileDigestBytes / 1e6);
    List<BenchResult> results = new java.util.ArrayList<>();
    results.addAll(fanOut);
    results.addAll(
        List.of(
            none("shard_tables_total_bytes", tableBytes, "bytes"),
            none("model_tile_digest_bytes_if_enabled", tileDigestBytes, "bytes"),
            none("model_replica_tile_digest_bytes_not_listed", replicaTileDigestBytes, "bytes"),
            none("model_wire_receiver_bound_s", wireReceivers, "s"),
            none("model_wire_trainer_bound_s", wireTrainers, "s"),
            none("model_control_plane_s", controlPlane, "s"),
            new BenchResult(
                "model_refit_s", refit, "s", "perplexity_kimi_k2_s", PERPLEXITY_KIMI_K2_S),
            new BenchResult(
                "model_refit_warm_s", refitWarm, "s", "perplexity_kimi_k2_s", PERPLEXITY_KIMI_K2_S),
            none("model_wire_fp8_block_sources_s", wireFp8, "s"),
            new BenchResult(
                "model_refit_fp8_block_sources_s",
                refitFp8,
                "s",
                "perplexity_kimi_k2_s",
                PERPLEXITY_KIMI_K2_S),
            new BenchResult(
                "model_refit_warm_fp8_block_sources_s",
                refitWarmFp8,
                "s",
                "perplexity_kimi_k2_s",
                PERPLEXITY_KIMI_K2_S)));
    return results;
  }
}
