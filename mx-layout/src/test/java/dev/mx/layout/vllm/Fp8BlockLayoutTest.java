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
    Fp8BlockLayout q = Fp8BlockLayout.defaults(layout("tiny-qwen2", 2, 1), 128);
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

  @Test
  void partialTilesRoundTheScaleShapeUp() {
    // tiny-llama tp=2: qkv_proj holds (4 + 2 * 1) heads of 8 = 48 rows of 64.
    Fp8BlockLayout q = Fp8BlockLayout.defaults(layout("tiny-llama", 2, 1), 32);
    assertEquals(
        Shape.of(2, 2),
        q.engine().get("model.layers.0.self_attn.qkv_proj.weight_scale_inv").shape());
    assertEquals(Shape.of(1, 1), Fp8BlockLayout.scaleShape(Shape.of(48, 64), 128));
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
    Fp8BlockLayout only = Fp8BlockLayout.matching(l, 128, List.of("*.o_proj.weight"));
    assertEquals(
        List.of("model.layers.0.self_attn.o_proj.weight", "model.layers.1.self_attn.o_proj.weight"),
        List.copyOf(only.scales().keySet()));
  }
}
