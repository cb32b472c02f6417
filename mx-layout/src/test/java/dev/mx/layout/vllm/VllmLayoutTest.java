package dev.mx.layout.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.CopyReplay;
import dev.mx.layout.LayoutException;
import dev.mx.layout.gen.FloatBits;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class VllmLayoutTest {

  static Stream<Arguments> topologies() {
    List<Arguments> out = new ArrayList<>();
    for (String model :
        List.of(
            "tiny-llama",
            "tiny-mistral",
            "tiny-qwen2",
            "tiny-qwen3",
            "tiny-qwen3-moe",
            "tiny-deepseek")) {
      boolean moe = model.endsWith("moe") || model.equals("tiny-deepseek");
      for (int t : new int[] {1, 2, 4, 8}) {
        if (model.equals("tiny-mistral") && t == 8) {
          continue; // 4 query heads
        }
        out.add(Arguments.of(model, new InferenceTopology(t, 1)));
        if (moe && t > 1) {
          out.add(Arguments.of(model, new InferenceTopology(t, t)));
        }
      }
    }
    // Data-parallel attention groups sharing one expert-parallel group (vLLM dp x tp = ep).
    out.add(Arguments.of("tiny-deepseek", new InferenceTopology(2, 8)));
    out.add(Arguments.of("tiny-deepseek", new InferenceTopology(1, 4)));
    out.add(Arguments.of("tiny-qwen3-moe", new InferenceTopology(2, 4)));
    return out.stream();
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("topologies")
  void parameterShapesFollowTheVllmRules(String name, InferenceTopology topology) {
    ModelArchitecture model = ModelConfigs.load(name);
    for (int r = 0; r < topology.worldSize(); r++) {
      VllmLayout layout = new VllmLayout(model, topology, r, DType.BF16);
      VllmReference ref = new VllmReference(model, topology, r);
      for (Map.Entry<String, ParamSpec> p : layout.params().entrySet()) {
        assertEquals(ref.shape(p.getKey()), p.getValue().shape(), p.getKey() + " on rank " + r);
        assertEquals(DType.BF16, p.getValue().dtype());
      }
    }
  }

  /**
   * Replays every copy element by element (narrow chains only — a test double of the planner's view
   * algebra) and checks that each non-padding parameter element is written exactly once, with the
   * element the reference names, and padding never.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("topologies")
  void copiesWriteEveryNonPaddingElementOnceWithTheReferenceElement(
      String name, InferenceTopology topology) {
    assertCopiesMatchReference(ModelConfigs.load(name), topology, null);
  }

  /**
   * The replay check of {@link #copiesWriteEveryNonPaddingElementOnceWithTheReferenceElement} for
   * every rank of {@code topology}, experts placed by {@code placement} (null: trainer order).
   */
  static void assertCopiesMatchReference(
      ModelArchitecture model, InferenceTopology topology, ExpertPlacement placement) {
    for (int r = 0; r < topology.worldSize(); r++) {
      VllmLayout layout = new VllmLayout(model, topology, r, DType.F32, placement);
      VllmReference ref = new VllmReference(model, topology, r, placement);
      Map<String, int[]> writes = new HashMap<>();
      layout
          .params()
          .forEach((p, spec) -> writes.put(p, new int[Math.toIntExact(spec.shape().numel())]));
      Capture capture = layout.capture(VllmLayout.manifest(model, DType.F32));
      assertEquals(List.of(), capture.result().unsupported());
      assertEquals(layout.params(), capture.paramLayout());
      int rank = r;
      for (RecordedCopy c : capture.result().copies()) {
        int[] w = writes.get(c.paramName());
        Shape global = model.tensor(c.srcName()).shape();
        CopyReplay.replay(
            c,
            global,
            (dest, src) -> {
              w[Math.toIntExact(dest)]++;
              GlobalElement want = ref.source(c.paramName(), dest);
              if (want == null || !want.equals(new GlobalElement(c.srcName(), src))) {
                fail(
                    "rank "
                        + rank
                        + ": "
                        + c
                        + " writes "
                        + c.srcName()
                        + "["
                        + src
                        + "] to element "
                        + dest
                        + " where the reference expects "
                        + want);
              }
            });
      }
      for (var e : writes.entrySet()) {
        for (int i = 0; i < e.getValue().length; i++) {
          int expected = ref.source(e.getKey(), i) == null ? 0 : 1;
          if (e.getValue()[i] != expected) {
            fail(
                "rank "
                    + r
                    + ": "
                    + e.getKey()
                    + "["
                    + i
                    + "] written "
                    + e.getValue()[i]
                    + " times, expected "
                    + expected);
          }
        }
      }
    }
  }

  @Test
  void fewerKvHeadsThanRanksReplicatesOneHeadPerRank() {
    ModelArchitecture model =
        ModelConfigs.load("tiny-llama"); // 8 heads, 2 KV heads, head_dim 8, hidden 64
    for (int r = 0; r < 4; r++) {
      VllmLayout layout = new VllmLayout(model, InferenceTopology.tp(4), r, DType.BF16);
      assertEquals(
          Shape.of((2 + 1 + 1) * 8, 64),
          layout.params().get("model.layers.0.self_attn.qkv_proj.weight").shape());
      List<RecordedCopy> k = layout.copiesOf("model.layers.0.self_attn.k_proj.weight");
      assertEquals(1, k.size());
      assertEquals(
          List.of(OpSpec.narrow(0, r / 2 * 8L, 8)),
          k.getFirst().opChain(),
          "rank " + r + " holds KV head " + r / 2);
      assertEquals(16 * 64, k.getFirst().destOffset());
      assertEquals(
          24 * 64,
          layout.copiesOf("model.layers.0.self_attn.v_proj.weight").getFirst().destOffset());
      assertEquals(
          List.of(OpSpec.narrow(0, r * 16L, 16)),
          layout.copiesOf("model.layers.0.self_attn.q_proj.weight").getFirst().opChain());
    }
  }

  @Test
  void vocabularyIsPaddedToSixtyFourAndPaddingRowsAreNotCopied() {
    ModelArchitecture model =
        ModelConfigs.load("tiny-llama"); // vocab 1000 -> 1024, 128 rows per rank at tp 8
    VllmLayout last = new VllmLayout(model, InferenceTopology.tp(8), 7, DType.BF16);
    assertEquals(1024, last.paddedVocab());
    assertEquals(Shape.of(128, 64), last.params().get("lm_head.weight").shape());
    RecordedCopy head = last.copiesOf("lm_head.weight").getFirst();
    assertEquals(List.of(OpSpec.narrow(0, 896, 104)), head.opChain());
    assertEquals(Shape.of(104, 64), head.destShape());
  }

  @Test
  void expertLayoutsForEpOneAndEpEqualsTp() {
    ModelArchitecture model = ModelConfigs.load("tiny-qwen3-moe"); // 8 experts x 32, hidden 64
    VllmLayout sliced = new VllmLayout(model, InferenceTopology.tp(4), 1, DType.BF16);
    assertEquals(
        Shape.of(8, 16, 64), sliced.params().get("model.layers.1.mlp.experts.w13_weight").shape());
    assertEquals(
        Shape.of(8, 64, 8), sliced.params().get("model.layers.1.mlp.experts.w2_weight").shape());
    RecordedCopy up5 = sliced.copiesOf("model.layers.1.mlp.experts.5.up_proj.weight").getFirst();
    assertEquals(List.of(OpSpec.narrow(0, 8, 8)), up5.opChain());
    assertEquals(5 * 16 * 64 + 8 * 64, up5.destOffset());
    RecordedCopy down5 =
        sliced.copiesOf("model.layers.1.mlp.experts.5.down_proj.weight").getFirst();
    assertEquals(List.of(OpSpec.narrow(1, 8, 8)), down5.opChain());
    assertEquals(5 * 64 * 8, down5.destOffset());

    VllmLayout whole = new VllmLayout(model, new InferenceTopology(4, 4), 1, DType.BF16);
    assertEquals(
        Shape.of(2, 64, 64), whole.params().get("model.layers.1.mlp.experts.w13_weight").shape());
    assertEquals(
        Shape.of(2, 64, 32), whole.params().get("model.layers.1.mlp.experts.w2_weight").shape());
    assertEquals(
        List.of(),
        whole.copiesOf("model.layers.1.mlp.experts.1.gate_proj.weight"),
        "expert 1 lives on rank 0");
    RecordedCopy up3 = whole.copiesOf("model.layers.1.mlp.experts.3.up_proj.weight").getFirst();
    assertEquals(List.of(), up3.opChain());
    assertEquals(64 * 64 + 32 * 64, up3.destOffset());
    assertEquals(
        Shape.of(64, 128 / 4),
        whole.params().get("model.layers.0.mlp.down_proj.weight").shape(),
        "layer 0 stays dense");
  }

  @Test
  void captureReportsUnknownAndMisshapenSources() {
    ModelArchitecture model = ModelConfigs.load("tiny-qwen2");
    VllmLayout layout = new VllmLayout(model, InferenceTopology.tp(2), 0, DType.BF16);
    Capture c =
        layout.capture(
            List.of(
                new ManifestEntry("model.layers.0.self_attn.q_proj.bias", DType.F32, Shape.of(64)),
                new ManifestEntry(
                    "model.layers.9.mlp.up_proj.weight", DType.F32, Shape.of(128, 64)),
                new ManifestEntry("model.norm.weight", DType.F32, Shape.of(65))));
    assertEquals(
        List.of("model.layers.9.mlp.up_proj.weight", "model.norm.weight"),
        c.result().unsupported());
    assertTrue(c.result().unsupportedReasons().get("model.norm.weight").contains("[65]"));
    assertTrue(
        c.result()
            .unsupportedReasons()
            .get("model.layers.9.mlp.up_proj.weight")
            .contains("tiny-qwen2"));
    assertEquals(1, c.result().copies().size());
    assertEquals(List.of(OpSpec.narrow(0, 0, 32)), c.result().copies().getFirst().opChain());
  }

  @Test
  void incompatibleTopologiesAreErrors() {
    ModelArchitecture llama = ModelConfigs.load("tiny-llama");
    assertMessage(
        () -> new VllmLayout(llama, InferenceTopology.tp(3), 0, DType.BF16),
        "num_attention_heads 8",
        "tp 3");
    assertMessage(
        () ->
            new VllmLayout(
                ModelConfigs.load("tiny-mistral"), InferenceTopology.tp(8), 0, DType.BF16),
        "tp 8");
    assertMessage(
        () -> new VllmLayout(llama, new InferenceTopology(2, 2), 0, DType.BF16),
        "mixture-of-experts");
    assertMessage(() -> new VllmLayout(llama, InferenceTopology.tp(2), 2, DType.BF16), "rank 2");
    assertMessage(() -> new InferenceTopology(4, 6), "ep must be 1 or a multiple of tp");
    assertMessage(() -> InferenceTopology.parse("tp=2,pp=2"), "'pp'");
    assertEquals(new InferenceTopology(4, 4), InferenceTopology.parse("tp=4,ep=4"));
    assertEquals(InferenceTopology.tp(2), InferenceTopology.parse("tp=2"));
  }

  @Test
  void referenceComparisonFindsACorruptedElementAndNonZeroPadding() {
    ModelArchitecture model = ModelConfigs.load("tiny-llama");
    InferenceTopology topology = InferenceTopology.tp(8);
    VllmReference ref = new VllmReference(model, topology, 7);
    String param = "model.embed_tokens.weight";
    long n = ref.shape(param).numel();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment seg = arena.allocate(n * 2);
      for (long i = 0; i < n; i++) {
        seg.setAtIndex(
            ValueLayout.JAVA_SHORT,
            i,
            (short) ref.expectedBits(param, i, 5, DType.F32, DType.BF16));
      }
      assertEquals(List.of(), ref.mismatches(param, seg, 5, DType.F32, DType.BF16, 10));
      assertEquals(0, FloatBits.bitsAt(seg, 104 * 64, DType.BF16), "row 1000 is padding");
      seg.setAtIndex(
          ValueLayout.JAVA_SHORT, 3, (short) (seg.getAtIndex(ValueLayout.JAVA_SHORT, 3) ^ 1));
      seg.setAtIndex(ValueLayout.JAVA_SHORT, 104 * 64 + 1, (short) 1);
      List<String> bad = ref.mismatches(param, seg, 5, DType.F32, DType.BF16, 10);
      assertEquals(2, bad.size(), bad.toString());
      assertTrue(
          bad.get(0).startsWith(param + "[3] ")
              && bad.get(0).contains("from " + param + "[" + (896 * 64 + 3) + "]"),
          bad.get(0));
      assertTrue(bad.get(1).contains("padding"), bad.get(1));
    }
  }

  /**
   * {@link VllmReference#mismatches} relies on every aligned run of a parameter mapping to one
   * global tensor.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("topologies")
  void everyParameterRowIsARunOfOneGlobalTensor(String name, InferenceTopology topology) {
    ModelArchitecture model = ModelConfigs.load(name);
    int r = topology.tp() - 1;
    VllmReference ref = new VllmReference(model, topology, r);
    for (String param : new VllmLayout(model, topology, r, DType.BF16).params().keySet()) {
      Shape s = ref.shape(param);
      long width = ref.runLength(param);
      assertEquals(0, s.numel() % width, param);
      for (long row = 0; row < s.numel(); row += width) {
        GlobalElement first = ref.source(param, row);
        for (long j = 1; j < width; j++) {
          GlobalElement e = ref.source(param, row + j);
          GlobalElement run =
              first == null ? null : new GlobalElement(first.tensor(), first.flatIndex() + j);
          long at = row + j;
          assertEquals(run, e, () -> param + "[" + at + "]");
        }
      }
    }
  }

  @Test
  void castChainsRoundOnceFromTheTrainerDtype() {
    float v = Float.intBitsToFloat(0x3f818000); // a bf16 tie
    assertEquals(0x3f82, VllmReference.castBits(v, DType.F32, DType.BF16));
    assertEquals(0x3f820000L, VllmReference.castBits(v, DType.BF16, DType.F32));
    assertEquals(
        Float.floatToRawIntBits(v) & 0xffffffffL, VllmReference.castBits(v, DType.F32, DType.F32));
  }

  private static void assertMessage(Runnable r, String... parts) {
    var e = assertThrows(LayoutException.class, r::run);
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' should mention " + p);
    }
  }
}
