package dev.mx.layout.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelConfigs;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The default fp8 parameter rule and the engine layout it gives, on the bundled models. */
class Fp8BlockLayoutTest {

  private static VllmLayout layout(String model, int tp, int ep) {
    return new VllmLayout(ModelConfigs.load(model), new InferenceTopology(tp, ep), 0, DType.BF16);
  }

  @Test
  void theDefaultRuleQuantizesAttentionAndMlpWeightsFusedOnesIncluded() {
    Fp8BlockLayout q = Fp8BlockLayout.defaults(layout("tiny-qwen2", 2, 1), 128, true);
    for (String name : layout("tiny-qwen2", 2, 1).params().keySet()) {
      boolean want =
          name.endsWith("qkv_proj.weight")
              || name.endsWith("o_proj.weight")
              || name.endsWith("gate_up_proj.weight")
              || name.endsWith("down_proj.weight");
      assertEquals(want, q.scales().containsKey(name), name);
    }
    // Biases (tiny-qwen2 has qkv biases), norms, embeddings and lm_head stay in the inference
    // dtype.
    assertEquals(DType.BF16, q.engine().get("model.layers.0.self_attn.qkv_proj.bias").dtype());
    assertEquals(DType.BF16, q.engine().get("model.embed_tokens.weight").dtype());
    assertEquals(
        "model.layers.1.self_attn.qkv_proj.weight_scale_inv",
        q.scales().get("model.layers.1.self_attn.qkv_proj.weight"));
  }

  @Test
  void expertsAreQuantizedPerExpertAndTheRouterIsNot() {
    Fp8BlockLayout q = Fp8BlockLayout.defaults(layout("tiny-qwen3-moe", 2, 2), 16);
    assertEquals(
        List.of(32L, 32L), boxed(q.members().get("model.layers.1.mlp.experts.w13_weight")));
    Map<String, ParamSpec> e = q.engine();
    String w13 = "model.layers.1.mlp.experts.w13_weight";
    // 4 local experts of (2 * 32) x 64 in 16 x 16 tiles.
    assertEquals(new ParamSpec(Shape.of(4, 64, 64), DType.F8_E4M3FN), e.get(w13));
    assertEquals(new ParamSpec(Shape.of(4, 4, 4), DType.F32), e.get(w13 + "_scale_inv"));
    assertEquals(
        new ParamSpec(Shape.of(4, 4, 2), DType.F32),
        e.get("model.layers.1.mlp.experts.w2_weight_scale_inv"));
    assertEquals(DType.BF16, e.get("model.layers.1.mlp.gate.weight").dtype(), "the router");
    assertEquals(DType.BF16, e.get("model.layers.1.self_attn.q_norm.weight").dtype());
    assertTrue(q.scales().containsKey("model.layers.0.mlp.gate_up_proj.weight"), "dense layer 0");
    // Each scale follows its weight, in load order.
    List<String> names = List.copyOf(e.keySet());
    assertEquals(names.indexOf(w13) + 1, names.indexOf(w13 + "_scale_inv"));
  }

  private static List<Long> boxed(long[] a) {
    return java.util.Arrays.stream(a).boxed().toList();
  }

  @Test
  void partialBlocksPerMemberGiveEachMemberItsOwnBlockRows() {
    // tiny-llama tp=2: qkv_proj holds q (4 heads of 8 = 32 rows), k and v (1 head, 8 rows each).
    Fp8BlockLayout q = Fp8BlockLayout.defaults(layout("tiny-llama", 2, 1), 32, true);
    String qkv = "model.layers.0.self_attn.qkv_proj.weight";
    assertEquals(List.of(32L, 8L, 8L), boxed(q.members().get(qkv)));
    // 1 + 1 + 1 block rows, never one block across members; 2 block columns of 64.
    assertEquals(Shape.of(3, 2), q.engine().get(qkv + "_scale_inv").shape());
    assertEquals(
        List.of(64L, 64L), boxed(q.members().get("model.layers.0.mlp.gate_up_proj.weight")));
    assertEquals(List.of(64L), boxed(q.members().get("model.layers.0.self_attn.o_proj.weight")));
    assertTrue(q.partialBlocks());
    assertEquals(Shape.of(1, 1), Fp8BlockLayout.scaleShape(Shape.of(48, 64), 128));
    assertEquals(
        Shape.of(4, 3, 1),
        Fp8BlockLayout.scaleShape(Shape.of(4, 48, 64), 128, new long[] {32, 8, 8}));
  }

  @Test
  void aLayoutVllmRefusesFailsNamingTheParameterThePartitionAndTheBlock() {
    // k_proj's 8 rows per rank: an output partition of a fused qkv_proj under tp=2.
    LayoutException fused =
        assertThrows(
            LayoutException.class, () -> Fp8BlockLayout.defaults(layout("tiny-llama", 2, 1), 32));
    assertTrue(
        fused
            .getMessage()
            .contains(
                "'model.layers.0.self_attn.qkv_proj.weight': its member"
                    + " 'model.layers.0.self_attn.k_proj.weight' has an output partition of 8 rows,"
                    + " not a multiple of the block 32"),
        fused.getMessage());
    // o_proj alone: its 32 local input columns under tp=2 against block 64 (qkv ruled out by the
    // glob).
    LayoutException rowParallel =
        assertThrows(
            LayoutException.class,
            () ->
                Fp8BlockLayout.matching(
                    layout("tiny-llama", 2, 1), 64, List.of("*.o_proj.weight")));
    assertTrue(
        rowParallel
            .getMessage()
            .contains(
                "'model.layers.0.self_attn.o_proj.weight': its row-parallel input partition is 32"
                    + " columns, not a multiple of the block 64"),
        rowParallel.getMessage());
    // Experts under ep: gate and up of 32 rows each against block 128, fused.
    LayoutException experts =
        assertThrows(
            LayoutException.class,
            () ->
                Fp8BlockLayout.matching(
                    layout("tiny-qwen3-moe", 2, 2), 128, List.of("*.w13_weight")));
    assertTrue(
        experts
            .getMessage()
            .contains(
                "'model.layers.1.mlp.experts.w13_weight': its member"
                    + " 'model.layers.1.mlp.experts.0.gate_proj.weight' has an output partition of"
                    + " 32 rows, not a multiple of the block 128"),
        experts.getMessage());
    // llama-3.2-1b at tp=2: every partition a multiple of 128 (the default demo).
    Fp8BlockLayout llama = Fp8BlockLayout.defaults(layout("llama-3.2-1b", 2, 1), 128);
    assertEquals(
        List.of(1024L, 256L, 256L),
        boxed(llama.members().get("model.layers.0.self_attn.qkv_proj.weight")));
    // tp=1, not fused: o_proj's 64 columns end in a partial block as vLLM allows.
    Fp8BlockLayout single =
        Fp8BlockLayout.matching(layout("tiny-llama", 1, 1), 128, List.of("*.o_proj.weight"));
    assertEquals(
        Shape.of(1, 1),
        single.engine().get("model.layers.0.self_attn.o_proj.weight_scale_inv").shape());
  }

  @Test
  void aRuleNamingNoParameterOrAVectorIsRejectedNamingIt() {
    VllmLayout l = layout("tiny-llama", 2, 1);
    LayoutException none =
        assertThrows(
            LayoutException.class,
            () -> Fp8BlockLayout.matching(l, 128, List.of("*.o_proj.weight", "*.w13_weight")));
    assertTrue(none.getMessage().contains("'*.w13_weight' names no parameter"), none.getMessage());
    LayoutException vector =
        assertThrows(
            LayoutException.class,
            () -> Fp8BlockLayout.matching(l, 128, List.of("model.norm.weight")));
    assertTrue(
        vector.getMessage().contains("'model.norm.weight' of shape [64]"), vector.getMessage());
    Fp8BlockLayout only = Fp8BlockLayout.matching(l, 128, List.of("*.o_proj.weight"), true);
    assertEquals(
        List.of("model.layers.0.self_attn.o_proj.weight", "model.layers.1.self_attn.o_proj.weight"),
        List.copyOf(only.scales().keySet()));
  }
}
