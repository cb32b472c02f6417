package dev.mx.cli.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.StagedShard;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.util.Settings;
import dev.mx.layout.PlanningInventory;
import dev.mx.layout.ShardAddressing;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.GlobalElement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.view.StridedView;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Model/topology pairs of the layout tests (dense, GQA, MoE with EP, PP, FSDP; dtype changes),
 * planned per receiver rank in {@code shard} mode and accounted element by element against
 * mx-layout's independent vLLM reference: every non-padding parameter element is written exactly
 * once — by an exact segment, a convert, a full pull's or a staged shard's replayed copy — with the
 * global element the reference names. Cost settings vary so that every option is exercised.
 */
class ShardPlannedCoverageTest {

  record Case(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      DType trainerDtype,
      DType inferenceDtype,
      double descriptorUs) {
    @Override
    public String toString() {
      return model
          + " "
          + trainer
          + " "
          + trainerDtype
          + " -> "
          + inference
          + " "
          + inferenceDtype
          + " at "
          + descriptorUs
          + " us/descriptor";
    }
  }

  static Stream<Case> cases() {
    return Stream.of(
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(4, 2, 1),
            InferenceTopology.tp(8),
            DType.F32,
            DType.BF16,
            1.5),
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(1),
            DType.BF16,
            DType.BF16,
            50),
        new Case(
            "tiny-llama",
            new TrainerTopology.Fsdp(3),
            InferenceTopology.tp(4),
            DType.BF16,
            DType.BF16,
            1.5),
        new Case(
            "tiny-mistral",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(4),
            DType.BF16,
            DType.BF16,
            1000),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Megatron(1, 2, 1),
            InferenceTopology.tp(2),
            DType.BF16,
            DType.BF16,
            1.5),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Megatron(4, 1, 1),
            InferenceTopology.tp(8),
            DType.BF16,
            DType.BF16,
            50),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Megatron(2, 2, 1),
            InferenceTopology.tp(2),
            DType.F32,
            DType.F16,
            1000),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(2, 1, 2),
            new InferenceTopology(4, 4),
            DType.BF16,
            DType.BF16,
            50),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Fsdp(3),
            new InferenceTopology(8, 8),
            DType.BF16,
            DType.BF16,
            1000),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(4, 2, 2),
            InferenceTopology.tp(4),
            DType.F32,
            DType.BF16,
            1.5));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void shardBoundedPlansWriteEveryElementOnceFromTheReferenceElement(Case c) {
    ModelArchitecture model = ModelConfigs.load(c.model());
    TrainerLayout trainer = c.trainer().layout(model, c.trainerDtype());
    Map<String, SourceInfo> sources =
        PlanningInventory.sources(trainer.ranks(), ShardAddressing.synthetic());
    Settings none = Settings.of(Map.of(), Map.of());
    PlanOptions options =
        PlanOptions.fromSettings(BoundingMode.SHARD, none)
            .withCosts(
                new dev.mx.api.transport.TransportCosts(c.descriptorUs() * 1e-6, 24e9, 10e9));
    Map<String, Integer> chosen = new TreeMap<>();
    for (int rank = 0; rank < c.inference().tp(); rank++) {
      VllmLayout layout = new VllmLayout(model, c.inference(), rank, c.inferenceDtype());
      Capture capture = layout.capture(VllmLayout.manifest(model, c.trainerDtype()));
      TransferPlan plan = new ReshardPlanner(none).plan(capture.result(), sources, options);
      assertEquals(Map.of(), plan.fallbackReasons(), c + " rank " + rank);
      plan.boundingDecisions().forEach(d -> chosen.merge(d.chosen().label(), 1, Integer::sum));
      new Account(c, rank, model, layout, sources, plan, capture).run();
    }
    System.out.println(c + ": " + chosen);
  }

  /** Counts every write of one rank's plan and checks where each comes from. */
  private static final class Account {
    private final Case c;
    private final int rank;
    private final VllmReference ref;
    private final VllmLayout layout;
    private final Map<String, SourceInfo> sources;
    private final TransferPlan plan;
    private final Capture capture;
    private final Map<String, int[]> hits = new HashMap<>();

    /** session -> shard start address -> (source, shard). */
    private final Map<String, TreeMap<Long, Map.Entry<String, Shard>>> byAddress = new HashMap<>();

    Account(
        Case c,
        int rank,
        ModelArchitecture model,
        VllmLayout layout,
        Map<String, SourceInfo> sources,
        TransferPlan plan,
        Capture capture) {
      this.c = c;
      this.rank = rank;
      this.ref = new VllmReference(model, c.inference(), rank);
      this.layout = layout;
      this.sources = sources;
      this.plan = plan;
      this.capture = capture;
      sources.forEach(
          (name, info) ->
              info.shards()
                  .forEach(
                      s ->
                          byAddress
                              .computeIfAbsent(s.session(), k -> new TreeMap<>())
                              .put(s.addr(), Map.entry(name, s))));
    }

    void run() {
      layout
          .params()
          .forEach((p, spec) -> hits.put(p, new int[Math.toIntExact(spec.shape().numel())]));
      int elsize = c.inferenceDtype().elementSize();
      for (PullSegment s : plan.segments()) {
        for (long j = 0; j < s.nbytes() / elsize; j++) {
          write(
              s.paramName(),
              s.dstByte() / elsize + j,
              element(s.session(), s.srcAddr() + j * elsize),
              s);
        }
      }
      converts();
      for (FullPullSource f : plan.fullPulls()) {
        for (RecordedCopy copy : f.copies()) {
          replay(
              copy,
              f.globalShape(),
              (dest, src) ->
                  write(copy.paramName(), dest, new GlobalElement(copy.srcName(), src), copy));
        }
      }
      for (StagedShard st : plan.stagedShards()) {
        long[] off = st.shard().shardOffset();
        long[] dims = st.shard().shape().dims();
        long[] gs = sources.get(st.srcName()).globalShape().rowMajorStrides();
        for (RecordedCopy copy : st.copies()) {
          replay(
              copy,
              st.shard().shape(),
              (dest, local) -> {
                long flat = 0;
                long k = local;
                for (int d = dims.length - 1; d >= 0; d--) {
                  flat += (off[d] + k % dims[d]) * gs[d];
                  k /= dims[d];
                }
                write(copy.paramName(), dest, new GlobalElement(st.srcName(), flat), copy);
              });
        }
      }
      for (var e : hits.entrySet()) {
        int[] h = e.getValue();
        for (int i = 0; i < h.length; i++) {
          int want = ref.source(e.getKey(), i) == null ? 0 : 1;
          if (h[i] != want) {
            fail(
                c
                    + " rank "
                    + rank
                    + ": "
                    + e.getKey()
                    + "["
                    + i
                    + "] written "
                    + h[i]
                    + " times, expected "
                    + want);
          }
        }
      }
    }

    /** The k-th convert belongs to the k-th dtype-changing copy whose source is read exactly. */
    private void converts() {
      int k = 0;
      for (RecordedCopy copy : capture.result().copies()) {
        SourceInfo info = sources.get(copy.srcName());
        BoundingDecision d = plan.decision(copy.srcName());
        if (info.dtype() == copy.destDtype() || d.chosen() != BoundingDecision.Option.EXACT) {
          continue;
        }
        ConvertSource cs = plan.converts().get(k++);
        assertEquals(copy.paramName(), cs.paramName());
        long[] destOf = new long[Math.toIntExact(copy.destShape().numel())];
        int[] n = {0};
        replay(copy, info.globalShape(), (dest, src) -> destOf[n[0]++] = dest);
        int elsize = info.elsize();
        for (PullSegment s : cs.segments()) {
          for (long j = 0; j < s.nbytes() / elsize; j++) {
            write(
                cs.paramName(),
                destOf[Math.toIntExact(s.dstByte() / elsize + j)],
                element(s.session(), s.srcAddr() + j * elsize),
                s);
          }
        }
      }
      assertEquals(plan.converts().size(), k, "every convert accounted for");
    }

    private GlobalElement element(String session, long addr) {
      var e = byAddress.get(session).floorEntry(addr);
      Shard s = e.getValue().getValue();
      long k = (addr - s.addr()) / s.elsize();
      long[] dims = s.shape().dims();
      long[] off = s.shardOffset();
      long[] gs = sources.get(e.getValue().getKey()).globalShape().rowMajorStrides();
      long flat = 0;
      for (int d = dims.length - 1; d >= 0; d--) {
        flat += (off[d] + k % dims[d]) * gs[d];
        k /= dims[d];
      }
      return new GlobalElement(e.getValue().getKey(), flat);
    }

    private void write(String param, long element, GlobalElement got, Object via) {
      GlobalElement want = ref.source(param, element);
      if (!got.equals(want)) {
        fail(
            c
                + " rank "
                + rank
                + ": "
                + param
                + "["
                + element
                + "] receives "
                + got
                + " but the reference expects "
                + want
                + " (via "
                + via
                + ")");
      }
      hits.get(param)[Math.toIntExact(element)]++;
    }
  }

  private interface Visit {
    void at(long dest, long src);
  }

  /**
   * Every element of {@code copy}: its flat destination index and the flat index it reads in the
   * root.
   */
  private static void replay(RecordedCopy copy, Shape root, Visit visit) {
    StridedView v = StridedView.replay(root, copy.opChain(), copy.srcName());
    long[] shape = copy.destShape().dims();
    long[] vs = v.strides();
    long[] ds = copy.destStride();
    long[] idx = new long[shape.length];
    for (long k = 0; k < copy.destShape().numel(); k++) {
      long s = v.offset();
      long t = copy.destOffset();
      for (int d = 0; d < shape.length; d++) {
        s += idx[d] * vs[d];
        t += idx[d] * ds[d];
      }
      visit.at(t, s);
      for (int d = shape.length - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
  }
}
