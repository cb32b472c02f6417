package dev.mx.layout.vllm;

import dev.mx.layout.LayoutException;
import java.util.Map;

/**
 * vLLM's tensor parallel size {@code tp} and expert parallel size {@code ep}: 1 (every rank holds
 * every expert, sliced), {@code tp} (rank r holds experts {@code [r·E/tp, (r+1)·E/tp)} whole), or a
 * multiple {@code tp·dp} of it: vLLM's {@code --data-parallel-size dp --enable-expert-parallel},
 * where {@code dp} attention groups of {@code tp} ranks each (rank r is attention rank {@code r %
 * tp}) share one expert-parallel group of all {@code ep} ranks.
 */
public record InferenceTopology(int tp, int ep) {

  public InferenceTopology {
    if (tp < 1) {
      throw new LayoutException("inference topology tp=" + tp + ": must be >= 1");
    }
    if (ep < 1 || (ep != 1 && ep % tp != 0)) {
      throw new LayoutException(
          "inference topology tp="
              + tp
              + ",ep="
              + ep
              + ": ep must be 1 or a multiple of tp (tp x data-parallel size)");
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

  /** Inference ranks: {@code tp}, or {@code ep} when data-parallel groups share the experts. */
  public int worldSize() {
    return Math.max(tp, ep);
  }

  /** The attention (tensor-parallel) rank of inference rank {@code rank}. */
  public int tpRank(int rank) {
    return rank % tp;
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
