package dev.mx.layout.vllm;

import dev.mx.layout.LayoutException;
import java.util.Map;

/**
 * vLLM's tensor parallel size {@code tp} and expert parallel size {@code ep}: 1 (every rank holds
 * every expert, sliced) or {@code tp} (rank r holds experts {@code [r·E/tp, (r+1)·E/tp)} whole).
 */
public record InferenceTopology(int tp, int ep) {

  public InferenceTopology {
    if (tp < 1) {
      throw new LayoutException("inference topology tp=" + tp + ": must be >= 1");
    }
    if (ep != 1 && ep != tp) {
      throw new LayoutException(
          "inference topology tp=" + tp + ",ep=" + ep + ": ep must be 1 or equal to tp");
    }
  }

  public static InferenceTopology tp(int tp) {
    return new InferenceTopology(tp, 1);
  }

  /** Parses {@code tp=2,ep=1} ({@code ep} defaults to 1). */
  public static InferenceTopology parse(String spec) {
    Map<String, Integer> kv = dev.mx.layout.TopologySpec.parse(spec, "inference");
    for (String k : kv.keySet()) {
      if (!k.equals("tp") && !k.equals("ep")) {
        throw new LayoutException(
            "inference topology '" + spec + "': unknown size '" + k + "' (use tp and ep)");
      }
    }
    return new InferenceTopology(kv.getOrDefault("tp", 1), kv.getOrDefault("ep", 1));
  }

  /** Whether experts are distributed whole across ranks. */
  public boolean expertParallel() {
    return ep > 1;
  }

  @Override
  public String toString() {
    return "tp=" + tp + ",ep=" + ep;
  }
}
