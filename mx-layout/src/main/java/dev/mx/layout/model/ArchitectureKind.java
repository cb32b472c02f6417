package dev.mx.layout.model;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/** The Hugging Face architectures mx can lay out, with the structural features each one implies. */
public enum ArchitectureKind {
  LLAMA("LlamaForCausalLM", false, false, false),
  MISTRAL("MistralForCausalLM", false, false, false),
  /**
   * Qwen2 always carries q/k/v projection biases (its config has no {@code attention_bias} key).
   */
  QWEN2("Qwen2ForCausalLM", true, false, false),
  /** Qwen3 normalizes each query and key head ({@code q_norm}, {@code k_norm}). */
  QWEN3("Qwen3ForCausalLM", false, true, false),
  QWEN3_MOE("Qwen3MoeForCausalLM", false, true, true);

  private final String hfName;
  private final boolean alwaysQkvBias;
  private final boolean qkNorm;
  private final boolean moe;

  ArchitectureKind(String hfName, boolean alwaysQkvBias, boolean qkNorm, boolean moe) {
    this.hfName = hfName;
    this.alwaysQkvBias = alwaysQkvBias;
    this.qkNorm = qkNorm;
    this.moe = moe;
  }

  /**
   * The name in {@code config.json}'s {@code architectures} list, e.g. {@code LlamaForCausalLM}.
   */
  public String hfName() {
    return hfName;
  }

  /** Whether q/k/v biases exist regardless of {@code attention_bias}. */
  public boolean alwaysQkvBias() {
    return alwaysQkvBias;
  }

  /** Whether each attention layer has per-head {@code q_norm} and {@code k_norm} weights. */
  public boolean qkNorm() {
    return qkNorm;
  }

  /** Whether the MLP may be a mixture of experts. */
  public boolean moe() {
    return moe;
  }

  public static Optional<ArchitectureKind> byHfName(String name) {
    return Arrays.stream(values()).filter(k -> k.hfName.equals(name)).findFirst();
  }

  /** The supported names, for error messages. */
  public static String supportedNames() {
    return Arrays.stream(values()).map(ArchitectureKind::hfName).collect(Collectors.joining(", "));
  }
}
