package dev.mx.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerLayout;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.GlobalElement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.plan.ReshardPlanner;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Plans every receiver rank against the trainer's published shards with the real planner (mx-plan)
 * and checks, element by element, that every parameter element other than vocabulary padding is
 * written exactly once — by an exact segment, a convert or a full pull's replayed copy — and that
 * the bytes it comes from (traced back through the synthetic addresses to the trainer alias that
 * publishes them) are the global element the independent vLLM reference names. Padding is never
 * written.
 */
class PlannedCoverageTest {

  record Case(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      DType trainerDtype,
      DType inferenceDtype,
      int maxSegments) {
    @Override
    public String toString() {
      return model
          + " trainer "
          + trainer
          + " "
          + trainerDtype
          + " -> inference "
          + inference
          + " "
          + inferenceDtype
          + " max "
          + maxSegments;
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
            64),
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(1),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-llama",
            new TrainerTopology.Fsdp(3),
            InferenceTopology.tp(4),
            DType.BF16,
            DType.BF16,
            2),
        new Case(
            "tiny-mistral",
            new TrainerTopology.Megatron(2, 1, 1),
            InferenceTopology.tp(4),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Megatron(1, 2, 1),
            InferenceTopology.tp(2),
            DType.BF16,
            DType.BF16,
            4),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Fsdp(2),
            InferenceTopology.tp(8),
            DType.F32,
            DType.BF16,
            64),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Megatron(4, 1, 1),
            InferenceTopology.tp(8),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Megatron(2, 2, 1),
            InferenceTopology.tp(2),
            DType.F32,
            DType.F16,
            1),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(2, 1, 2),
            new InferenceTopology(4, 4),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(1, 2, 2),
            InferenceTopology.tp(2),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Fsdp(3),
            new InferenceTopology(8, 8),
            DType.BF16,
            DType.BF16,
            8),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(4, 2, 2),
            InferenceTopology.tp(4),
            DType.F32,
            DType.BF16,
            64),
        new Case(
            "tiny-deepseek",
            new TrainerTopology.Megatron(2, 2, 4),
            new InferenceTopology(4, 8),
            DType.BF16,
            DType.BF16,
            64),
        new Case(
            "tiny-deepseek",
            new TrainerTopology.Megatron(4, 1, 2),
            InferenceTopology.tp(2),
            DType.F32,
            DType.BF16,
            8),
        new Case(
            "tiny-deepseek",
            new TrainerTopology.Fsdp(3),
            new InferenceTopology(8, 8),
            DType.BF16,
            DType.BF16,
            64));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void planCoversEveryNonPaddingElementOnceFromTheRightTrainerElement(Case c) {
    ModelArchitecture model = ModelConfigs.load(c.model());
    TrainerLayout trainer = c.trainer().layout(model, c.trainerDtype());
    ShardAddressing addressing = ShardAddressing.synthetic();
    Map<String, SourceInfo> sources = PlanningInventory.sources(trainer.ranks(), addressing);
    AddressIndex index = new AddressIndex(trainer.ranks(), addressing);
    for (int r = 0; r < c.inference().worldSize(); r++) {
      new RankCheck(model, c, r, sources, index).run();
    }
  }

  @Test
  void qwen3MoeBenchmarkInventoryPlansWithoutFallback() {
    PlanningInventory inv = PlanningInventory.qwen3MoeEp8ToTp8(3);
    // 48 layers x 128 experts x 3 projections, plus 11 attention/norm tensors per layer,
    // embeddings, norm, head.
    assertEquals(48 * (128 * 3 + 9) + 3, inv.sources().size());
    // Trainer TP=1: one shard per source, except q/k/v: the fused rows hold 4 KV groups, so 4 bands
    // each.
    assertEquals(inv.sources().size() + 48 * 3 * (4 - 1), inv.shardCount());
    assertEquals(48 * (128 * 3 + 9) + 3, inv.copyCount(), "one copy per source on a TP=8 rank");
    TransferPlan plan = new ReshardPlanner().plan(inv.capture().result(), inv.sources(), 64);
    assertEquals(Map.of(), plan.fallbackReasons());
    assertTrue(plan.descriptorCount() > 0);
  }

  /** Synthetic address -> the published alias holding it. */
  static final class AddressIndex {
    record Entry(String session, AliasShard alias, long addr, int elsize) {}

    private final TreeMap<Long, Entry> byAddress = new TreeMap<>();

    AddressIndex(List<TrainerRankLayout> ranks, ShardAddressing addressing) {
      for (TrainerRankLayout r : ranks) {
        for (AliasShard a : r.published()) {
          long addr = addressing.address(r, a);
          byAddress.put(addr, new Entry(addressing.session(r), a, addr, r.dtype().elementSize()));
        }
      }
    }

    /** The global element at {@code addr} of {@code session}. */
    GlobalElement element(String session, long addr) {
      var e = byAddress.floorEntry(addr);
      if (e == null) {
        throw new AssertionError("address " + addr + " is in no published shard");
      }
      Entry x = e.getValue();
      long k = (addr - x.addr) / x.elsize;
      if (!x.session.equals(session) || (addr - x.addr) % x.elsize != 0 || k >= x.alias.numel()) {
        throw new AssertionError(
            "address " + addr + " of session " + session + " is not an element of " + x.alias);
      }
      long[] dims = x.alias.shape().dims();
      long[] off = x.alias.shardOffset();
      long[] gs = x.alias.globalShape().rowMajorStrides();
      long flat = 0;
      for (int d = dims.length - 1; d >= 0; d--) {
        flat += (off[d] + k % dims[d]) * gs[d];
        k /= dims[d];
      }
      return new GlobalElement(x.alias.hfName(), flat);
    }
  }

  /** One receiver rank: plan, then account for every element the plan writes. */
  private static final class RankCheck {
    private final ModelArchitecture model;
    private final Case c;
    private final int rank;
    private final Map<String, SourceInfo> sources;
    private final AddressIndex index;
    private final VllmReference ref;
    private final Map<String, int[]> hits = new HashMap<>();

    RankCheck(
        ModelArchitecture model,
        Case c,
        int rank,
        Map<String, SourceInfo> sources,
        AddressIndex index) {
      this.model = model;
      this.c = c;
      this.rank = rank;
      this.sources = sources;
      this.index = index;
      this.ref = new VllmReference(model, c.inference(), rank);
    }

    void run() {
      VllmLayout layout = new VllmLayout(model, c.inference(), rank, c.inferenceDtype());
      Capture capture = layout.capture(VllmLayout.manifest(model, c.trainerDtype()));
      layout
          .params()
          .forEach((p, spec) -> hits.put(p, new int[Math.toIntExact(spec.shape().numel())]));
      TransferPlan plan = new ReshardPlanner().plan(capture.result(), sources, c.maxSegments());
      assertEquals(Map.of(), plan.fallbackReasons(), "rank " + rank + " fallback");
      // Unbounded sources (too many segments, but not a dim-0 partition to pull whole) stay exact:
      // still covered.
      exact(plan.segments());
      converts(plan.converts(), capture.result().copies());
      fullPulls(plan.fullPulls());
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

    private void exact(List<PullSegment> segments) {
      int elsize = c.inferenceDtype().elementSize();
      for (PullSegment s : segments) {
        long first = s.dstByte() / elsize;
        for (long j = 0; j < s.nbytes() / elsize; j++) {
          expectSource(
              s.paramName(), first + j, index.element(s.session(), s.srcAddr() + j * elsize), s);
          hits.get(s.paramName())[Math.toIntExact(first + j)]++;
        }
      }
    }

    /**
     * The k-th convert of a parameter belongs to its k-th copy whose source dtype differs from the
     * destination.
     */
    private void converts(List<ConvertSource> converts, List<RecordedCopy> copies) {
      Map<String, List<RecordedCopy>> mismatched = new HashMap<>();
      for (RecordedCopy copy : copies) {
        if (sources.get(copy.srcName()).dtype() != copy.destDtype()) {
          mismatched.computeIfAbsent(copy.paramName(), k -> new ArrayList<>()).add(copy);
        }
      }
      Map<String, Integer> seen = new HashMap<>();
      int elsize = c.trainerDtype().elementSize();
      for (ConvertSource cs : converts) {
        int k = seen.merge(cs.paramName(), 1, Integer::sum) - 1;
        RecordedCopy copy = mismatched.get(cs.paramName()).get(k);
        assertEquals(copy.destShape(), cs.destShape(), cs::paramName);
        long[] destOf = destinations(copy);
        int[] staged = new int[destOf.length];
        for (PullSegment s : cs.segments()) {
          long first = s.dstByte() / elsize;
          for (long j = 0; j < s.nbytes() / elsize; j++) {
            int e = Math.toIntExact(first + j);
            staged[e]++;
            expectSource(
                cs.paramName(), destOf[e], index.element(s.session(), s.srcAddr() + j * elsize), s);
          }
        }
        for (int e = 0; e < staged.length; e++) {
          int element = e;
          assertEquals(1, staged[e], () -> "convert staging element " + element + " of " + copy);
          hits.get(cs.paramName())[Math.toIntExact(destOf[e])]++;
        }
      }
    }

    private void fullPulls(List<FullPullSource> pulls) {
      for (FullPullSource fp : pulls) {
        int elsize = fp.elsize();
        int[] staged = new int[Math.toIntExact(fp.globalShape().numel())];
        for (PullSegment s : fp.segments()) {
          long first = s.dstByte() / elsize;
          for (long j = 0; j < s.nbytes() / elsize; j++) {
            GlobalElement got = index.element(s.session(), s.srcAddr() + j * elsize);
            assertEquals(
                new GlobalElement(fp.srcName(), first + j),
                got,
                () -> "full pull of " + fp.srcName());
            staged[Math.toIntExact(first + j)]++;
          }
        }
        for (int e = 0; e < staged.length; e++) {
          int element = e;
          assertEquals(
              1, staged[e], () -> "full-pull staging element " + element + " of " + fp.srcName());
        }
        for (RecordedCopy copy : fp.copies()) {
          CopyReplay.replay(
              copy,
              fp.globalShape(),
              (dest, src) -> {
                expectSource(copy.paramName(), dest, new GlobalElement(copy.srcName(), src), copy);
                hits.get(copy.paramName())[Math.toIntExact(dest)]++;
              });
        }
      }
    }

    /**
     * Flat parameter index of each destination element of a copy, in row-major order of its shape.
     */
    private long[] destinations(RecordedCopy copy) {
      long[] out = new long[Math.toIntExact(copy.destShape().numel())];
      int[] k = {0};
      CopyReplay.replay(
          copy, model.tensor(copy.srcName()).shape(), (dest, src) -> out[k[0]++] = dest);
      return out;
    }

    private void expectSource(String param, long element, GlobalElement got, Object via) {
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
    }
  }
}
