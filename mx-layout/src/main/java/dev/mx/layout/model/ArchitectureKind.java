package dev.mx.layout.model;

import java.util.Arrays;
import java.util.Optional;
import java.util.stream.Collectors;

/** The Hugging Face architectures mx can lay out, with the structural features each one implies. */
public enum ArchitectureKind {
  LLAMA("LlamaForCausalLM", false, false, false, false),
  MISTRAL("MistralForCausalLM", false, false, false, false),
  /**
   * Qwen2 always carries q/k/v projection biases (its config has no {@code attention_bias} key).
   */
  QWEN2("Qwen2ForCausalLM", true, false, false, false),
  /** Qwen3 normalizes each query and key head ({@code q_norm}, {@code k_norm}). */
  QWEN3("Qwen3ForCausalLM", false, true, false, false),
  QWEN3_MOE("Qwen3MoeForCausalLM", false, true, true, false),
  /**
   * DeepSeek-V3 (and Kimi-K2, which ships the same architecture): multi-head latent attention, the
   * first {@code first_k_dense_replace} layers dense, the rest routed plus shared experts.
   */
  DEEPSEEK_V3("DeepseekV3ForCausalLM", false, false, true, true);

  private final String hfName;
  private final boolean alwaysQkvBias;
  private final boolean qkNorm;
  private final boolean moe;
  private final boolean mla;

  ArchitectureKind(String hfName, boolean alwaysQkvBias, boolean qkNorm, boolean moe, boolean mla) {
    this.hfName = hfName;
    this.alwaysQkvBias = alwaysQkvBias;
    this.qkNorm = qkNorm;
    this.moe = moe;
    this.mla = mla;
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

  /**
   * Whether attention is DeepSeek's multi-head latent attention (low-rank q and kv projections with
   * their norms) instead of q/k/v projections.
   */
  public boolean mla() {
    return mla;
  }

  public static Optional<ArchitectureKind> byHfName(String name) {
    return Arrays.stream(values()).filter(k -> k.hfName.equals(name)).findFirst();
  }

  /** The supported names, for error messages. */
  public static String supportedNames() {
    return Arrays.stream(values()).map(ArchitectureKind::hfName).collect(Collectors.joining(", "));
  }
}
