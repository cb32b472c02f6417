package dev.mx.layout.trainer;

import dev.mx.api.Shape;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.vllm.GlobalElement;
import java.util.function.LongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A test oracle: which global element each element of a Megatron buffer holds, written from
 * Megatron-Core's native layout (fused QKV in by-head-group order, fc1 gate rows then up rows,
 * row-parallel column slices, padded vocabulary rows) without the alias machinery under test.
 */
final class NativeMegatronLayout {
  private static final Pattern LAYER = Pattern.compile("decoder\\.layers\\.(\\d+)\\.(.+)");
  private static final Pattern EXPERT =
      Pattern.compile("mlp\\.experts\\.linear_fc([12])\\.weight(\\d+)");

  private final ModelArchitecture m;
  private final TrainerTopology.Megatron topo;

  NativeMegatronLayout(ModelArchitecture m, TrainerTopology.Megatron topo) {
    this.m = m;
    this.topo = topo;
  }

  /** For buffer element {@code i}: the global element it holds, or null for padding. */
  LongFunction<GlobalElement> mapper(String buffer, Shape local, int tp, int ep) {
    return mapper(buffer, local, tp, ep, tp, ep);
  }

  /**
   * The same for the rank whose place in Megatron's expert grid is expert-TP rank {@code etp} of
   * expert-parallel rank {@code eep}.
   */
  LongFunction<GlobalElement> mapper(String buffer, Shape local, int tp, int ep, int etp, int eep) {
    long h = m.hiddenSize();
    switch (buffer) {
      case "embedding.word_embeddings.weight", "output_layer.weight" -> {
        String hf = buffer.startsWith("embedding") ? "model.embed_tokens.weight" : "lm_head.weight";
        return i -> {
          long row = tp * local.dim(0) + i / h;
          return row < m.vocabSize() ? new GlobalElement(hf, row * h + i % h) : null;
        };
      }
      case "decoder.final_layernorm.weight" -> {
        return identity("model.norm.weight");
      }
      default -> {}
    }
    Matcher lm = LAYER.matcher(buffer);
    if (!lm.matches()) {
      throw new AssertionError("unexpected buffer " + buffer);
    }
    String p = "model.layers." + lm.group(1) + ".";
    String rest = lm.group(2);
    Matcher em = EXPERT.matcher(rest);
    if (em.matches()) {
      int expert = eep * (m.numExperts() / topo.ep()) + Integer.parseInt(em.group(2));
      String x = p + "mlp.experts." + expert + ".";
      return em.group(1).equals("1")
          ? fc1(x, local, etp)
          : columns(x + "down_proj.weight", local, etp, topo.etp());
    }
    return switch (rest) {
      case "self_attention.linear_qkv.layer_norm_weight" -> identity(p + "input_layernorm.weight");
      case "mlp.linear_fc1.layer_norm_weight", "pre_mlp_layernorm.weight" ->
          identity(p + "post_attention_layernorm.weight");
      case "self_attention.q_layernorm.weight" -> identity(p + "self_attn.q_norm.weight");
      case "self_attention.k_layernorm.weight" -> identity(p + "self_attn.k_norm.weight");
      case "mlp.router.weight" -> identity(p + "mlp.gate.weight");
      case "mlp.router.expert_bias" -> identity(p + "mlp.gate.e_score_correction_bias");
      case "input_layernorm.weight" -> identity(p + "input_layernorm.weight");
      case "self_attention.linear_q_down_proj.weight" -> identity(p + "self_attn.q_a_proj.weight");
      case "self_attention.linear_kv_down_proj.weight" ->
          identity(p + "self_attn.kv_a_proj_with_mqa.weight");
      case "self_attention.linear_q_up_proj.layer_norm_weight" ->
          identity(p + "self_attn.q_a_layernorm.weight");
      case "self_attention.linear_kv_up_proj.layer_norm_weight" ->
          identity(p + "self_attn.kv_a_layernorm.weight");
      case "self_attention.linear_q_up_proj.weight" ->
          headRows(p + "self_attn.q_b_proj.weight", local, tp);
      case "self_attention.linear_kv_up_proj.weight" ->
          headRows(p + "self_attn.kv_b_proj.weight", local, tp);
      case "mlp.shared_experts.linear_fc1.weight" -> fc1(p + "mlp.shared_experts.", local, tp);
      case "mlp.shared_experts.linear_fc2.weight" ->
          columns(p + "mlp.shared_experts.down_proj.weight", local, tp);
      case "self_attention.linear_proj.weight" -> columns(p + "self_attn.o_proj.weight", local, tp);
      case "mlp.linear_fc2.weight" -> columns(p + "mlp.down_proj.weight", local, tp);
      case "mlp.linear_fc1.weight" -> fc1(p + "mlp.", local, tp);
      case "self_attention.linear_qkv.weight" -> qkv(p, "weight", local, tp);
      case "self_attention.linear_qkv.bias" -> qkv(p, "bias", local, tp);
      default -> throw new AssertionError("unexpected buffer " + buffer);
    };
  }

  /** Rank {@code tp}'s consecutive block of rows, whole heads in head order. */
  private static LongFunction<GlobalElement> headRows(String hf, Shape local, int tp) {
    long base = tp * local.numel();
    return i -> new GlobalElement(hf, base + i);
  }

  private static LongFunction<GlobalElement> identity(String hf) {
    return i -> new GlobalElement(hf, i);
  }

  private LongFunction<GlobalElement> qkv(String p, String suffix, Shape local, int tp) {
    long width = local.rank() == 2 ? local.dim(1) : 1;
    long hd = m.headDim();
    long qPerGroup = (long) m.numAttentionHeads() / m.numKeyValueHeads() * hd;
    String q = p + "self_attn.q_proj." + suffix;
    String k = p + "self_attn.k_proj." + suffix;
    String v = p + "self_attn.v_proj." + suffix;
    return i -> {
      long row = tp * local.dim(0) + i / width;
      long group = row / (qPerGroup + 2 * hd);
      long w = row % (qPerGroup + 2 * hd);
      if (w < qPerGroup) {
        return new GlobalElement(q, (group * qPerGroup + w) * width + i % width);
      } else if (w < qPerGroup + hd) {
        return new GlobalElement(k, (group * hd + w - qPerGroup) * width + i % width);
      }
      return new GlobalElement(v, (group * hd + w - qPerGroup - hd) * width + i % width);
    };
  }

  private LongFunction<GlobalElement> fc1(String prefix, Shape local, int tp) {
    long h = m.hiddenSize();
    long half = local.dim(0) / 2;
    String gate = prefix + "gate_proj.weight";
    String up = prefix + "up_proj.weight";
    return i -> {
      long row = i / h;
      return new GlobalElement(row < half ? gate : up, (tp * half + row % half) * h + i % h);
    };
  }

  private LongFunction<GlobalElement> columns(String hf, Shape local, int tp) {
    return columns(hf, local, tp, topo.tp());
  }

  /** Rank {@code tp} of {@code ranks}' column slice of every row. */
  private static LongFunction<GlobalElement> columns(String hf, Shape local, int tp, int ranks) {
    long cols = local.dim(1);
    return i -> new GlobalElement(hf, i / cols * cols * ranks + tp * cols + i % cols);
  }
}
