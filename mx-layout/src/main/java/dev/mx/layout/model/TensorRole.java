package dev.mx.layout.model;

/** What a global tensor is in the transformer, independent of any parallel layout. */
public enum TensorRole {
  EMBEDDING,
  LM_HEAD,
  FINAL_NORM,
  INPUT_NORM,
  Q_PROJ,
  K_PROJ,
  V_PROJ,
  Q_BIAS,
  K_BIAS,
  V_BIAS,
  O_PROJ,
  Q_NORM,
  K_NORM,
  POST_ATTENTION_NORM,
  GATE_PROJ,
  UP_PROJ,
  DOWN_PROJ,
  /** The MoE router, {@code mlp.gate.weight} (experts × hidden). */
  ROUTER,
  EXPERT_GATE_PROJ,
  EXPERT_UP_PROJ,
  EXPERT_DOWN_PROJ,
  /** DeepSeek-V3's router score bias, {@code mlp.gate.e_score_correction_bias} (experts). */
  ROUTER_BIAS,
  SHARED_EXPERT_GATE_PROJ,
  SHARED_EXPERT_UP_PROJ,
  SHARED_EXPERT_DOWN_PROJ,
  /** MLA: the query down-projection {@code q_a_proj} (q_lora_rank × hidden). */
  Q_A_PROJ,
  Q_A_NORM,
  /** MLA: the query up-projection {@code q_b_proj} (heads·(qk_nope + qk_rope) × q_lora_rank). */
  Q_B_PROJ,
  /** MLA: {@code kv_a_proj_with_mqa} ((kv_lora_rank + qk_rope) × hidden). */
  KV_A_PROJ,
  KV_A_NORM,
  /** MLA: {@code kv_b_proj} (heads·(qk_nope + v_head) × kv_lora_rank). */
  KV_B_PROJ;

  /** Whether the tensor belongs to one expert. */
  public boolean isExpert() {
    return this == EXPERT_GATE_PROJ || this == EXPERT_UP_PROJ || this == EXPERT_DOWN_PROJ;
  }
}
