package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ModelExpress (ARCHITECTURE §7.9) {@code test_reshard_refit_moe_experts.py}: per-expert sources
 * (gate, up, down of each expert, published by an EP=2 trainer) land in the fused {@code w13} and
 * {@code w2} of a TP=2 receiver (rank 1) through {@code unsqueeze(0).unbind()[0]} followed by the
 * TP narrow.
 */
class MoeExpertsTest {
  private static final int EXPERTS = 4;
  private static final int INTER = 4;
  private static final int HIDDEN = 6;
  private static final int TP = 2;
  private static final int RANK = 1;
  private static final int LOCAL = INTER / TP;

  private static List<OpSpec> unbindExpert(OpSpec tpSlice) {
    return List.of(
        OpSpec.of("unsqueeze", 0L), OpSpec.of("unbind"), OpSpec.of("__getitem__", 0L), tpSlice);
  }

  private static List<RecordedCopy> copies() {
    List<RecordedCopy> copies = new ArrayList<>();
    long w13Expert = 2L * LOCAL * HIDDEN;
    for (int e = 0; e < EXPERTS; e++) {
      OpSpec rows = OpSpec.narrow(0, (long) RANK * LOCAL, LOCAL);
      copies.add(
          RecordedCopy.contiguous(
              "experts." + e + ".gate_proj.weight",
              unbindExpert(rows),
              "w13",
              e * w13Expert,
              Shape.of(LOCAL, HIDDEN),
              DType.F32));
      copies.add(
          RecordedCopy.contiguous(
              "experts." + e + ".up_proj.weight",
              unbindExpert(rows),
              "w13",
              e * w13Expert + (long) LOCAL * HIDDEN,
              Shape.of(LOCAL, HIDDEN),
              DType.F32));
      copies.add(
          RecordedCopy.contiguous(
              "experts." + e + ".down_proj.weight",
              unbindExpert(OpSpec.narrow(1, (long) RANK * LOCAL, LOCAL)),
              "w2",
              (long) e * HIDDEN * LOCAL,
              Shape.of(HIDDEN, LOCAL),
              DType.F32));
    }
    return copies;
  }

  @Test
  void expertsLandInTheRightHalfOfW13AndInW2() {
    try (MemExecution x = new MemExecution()) {
      Map<String, GlobalTensor> tensors = new LinkedHashMap<>();
      Map<String, SourceInfo> sources = new LinkedHashMap<>();
      for (int e = 0; e < EXPERTS; e++) {
        String session = "ep" + (e / 2);
        for (String proj : List.of("gate_proj", "up_proj", "down_proj")) {
          String name = "experts." + e + "." + proj + ".weight";
          Shape shape =
              proj.equals("down_proj") ? Shape.of(HIDDEN, INTER) : Shape.of(INTER, HIDDEN);
          GlobalTensor t = new GlobalTensor(name, shape, DType.F32, name.hashCode());
          tensors.put(name, t);
          sources.put(
              name,
              x.source(
                  t, List.of(session), List.<long[][]>of(new long[][] {{0, 0}, shape.dims()})));
        }
      }
      x.param("w13", (long) EXPERTS * 2 * LOCAL * HIDDEN, DType.F32);
      x.param("w2", (long) EXPERTS * HIDDEN * LOCAL, DType.F32);
      ReshardPlanner planner = new ReshardPlanner(Settings.of(Map.of(), Map.of()));
      TransferPlan plan = planner.plan(CaptureResult.of(copies()), sources, 4);

      assertEquals(List.of(), plan.fallback());
      // gate/up row slices are one run each; each down slice needs 6 runs > 4 and is pulled whole
      assertEquals(2 * EXPERTS, plan.segments().size());
      assertEquals(EXPERTS, plan.fullPulls().size());
      assertEquals(2 * EXPERTS + EXPERTS * HIDDEN, plan.exactDescriptorCount());
      // hand-computed: expert 2's gate rows 2..3 start 2·6 elements into its shard, land at w13
      // element 2·24
      PullSegment gate2 = plan.segments().get(4);
      assertEquals(
          new PullSegment(
              "ep1",
              sources.get("experts.2.gate_proj.weight").shards().get(0).addr() + 48,
              "w13",
              2 * 24 * 4,
              48),
          gate2);
      PullSegment up2 = plan.segments().get(5);
      assertEquals((2 * 24 + 12) * 4, up2.dstByte());
      FullPullSource down3 = plan.fullPulls().get(3);
      assertEquals("experts.3.down_proj.weight", down3.srcName());
      assertEquals(
          List.of(
              new PullSegment(
                  "ep1",
                  sources.get(down3.srcName()).shards().get(0).addr(),
                  down3.srcName(),
                  0,
                  HIDDEN * INTER * 4)),
          down3.segments());

      x.execute(plan);
      for (int e = 0; e < EXPERTS; e++) {
        GlobalTensor gate = tensors.get("experts." + e + ".gate_proj.weight");
        GlobalTensor up = tensors.get("experts." + e + ".up_proj.weight");
        GlobalTensor down = tensors.get("experts." + e + ".down_proj.weight");
        for (int r = 0; r < LOCAL; r++) {
          for (int h = 0; h < HIDDEN; h++) {
            long g = (long) (RANK * LOCAL + r) * HIDDEN + h;
            assertEquals(
                gate.value(g), x.get("w13", e * 24L + r * HIDDEN + h), "gate of expert " + e);
            assertEquals(
                up.value(g), x.get("w13", e * 24L + 12 + r * HIDDEN + h), "up of expert " + e);
          }
        }
        for (int h = 0; h < HIDDEN; h++) {
          for (int c = 0; c < LOCAL; c++) {
            assertEquals(
                down.value((long) h * INTER + RANK * LOCAL + c),
                x.get("w2", e * 12L + h * LOCAL + c),
                "down of expert " + e);
          }
        }
      }
    }
  }

  @Test
  void chunkOfAFusedExpertTensorPicksTheUpHalf() {
    // a leading-expert-axis fused source (E, 2I, H): rank 1's up rows of expert 3 via unbind +
    // chunk + narrow
    Shape g = Shape.of(EXPERTS, 2 * INTER, HIDDEN);
    List<OpSpec> chain =
        List.of(
            OpSpec.of("unbind", 0L),
            OpSpec.of("getitem", 3L),
            OpSpec.of("chunk", 2L, 0L),
            OpSpec.of("getitem", 1L),
            OpSpec.narrow(0, (long) RANK * LOCAL, LOCAL),
            OpSpec.of("unsqueeze", 0L));
    RecordedCopy c =
        RecordedCopy.contiguous(
            "experts.w13", chain, "w13", 0, Shape.of(1, LOCAL, HIDDEN), DType.F32);
    NeededSlice need = SliceResolver.resolve(c, g);
    assertEquals(
        List.of(3L, (long) INTER + RANK * LOCAL, 0L),
        List.of(need.box().lo(0), need.box().lo(1), need.box().lo(2)));
    assertEquals(
        List.of(4L, (long) 2 * INTER, (long) HIDDEN),
        List.of(need.box().hi(0), need.box().hi(1), need.box().hi(2)));
  }
}
