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
  EXPERT_DOWN_PROJ;

  /** Whether the tensor belongs to one expert. */
  public boolean isExpert() {
    return this == EXPERT_GATE_PROJ || this == EXPERT_UP_PROJ || this == EXPERT_DOWN_PROJ;
  }
}
