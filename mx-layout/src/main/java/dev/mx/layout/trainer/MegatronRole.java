package dev.mx.layout.trainer;

import java.util.Arrays;
import java.util.Locale;

/**
 * The Megatron parameter roles of ModelExpress (ARCHITECTURE §7.6) and §5.2, with their
 * ModelExpress labels.
 */
public enum MegatronRole {
  COLUMN,
  ROW,
  REPLICATED,
  /**
   * Rows of a vocabulary padded past {@code vocab_size}; the published shard is clipped to the
   * global shape.
   */
  VOCAB_PARALLEL,
  QKV_COLUMN,
  GATED_MLP_COLUMN,
  EXPERT_COLUMN,
  EXPERT_ROW;

  /** The ModelExpress label, e.g. {@code qkv_column}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  public static MegatronRole parse(String label) {
    return Arrays.stream(values())
        .filter(r -> r.label().equals(label))
        .findFirst()
        .orElseThrow(() -> new IllegalArgumentException("unknown Megatron role '" + label + "'"));
  }
}
