package dev.mx.layout.trainer;

import dev.mx.api.DType;
import dev.mx.layout.LayoutException;
import dev.mx.layout.TopologySpec;
import dev.mx.layout.model.ModelArchitecture;
import java.util.Map;

/** How the trainer shards the model: Megatron-Core TP × PP × EP, or FSDP over N ranks. */
public sealed interface TrainerTopology {

  /** Number of trainer ranks (publishers). */
  int worldSize();

  /** The layout of {@code model} under this topology with buffers of {@code dtype}. */
  TrainerLayout layout(ModelArchitecture model, DType dtype);

  /** Megatron-Core tensor × pipeline × expert parallelism; world size {@code tp · pp · ep}. */
  record Megatron(int tp, int pp, int ep) implements TrainerTopology {
    public Megatron {
      if (tp < 1 || pp < 1 || ep < 1) {
        throw new LayoutException(
            "trainer topology tp=" + tp + ",pp=" + pp + ",ep=" + ep + ": every size must be >= 1");
      }
    }

    @Override
    public int worldSize() {
      return Math.multiplyExact(Math.multiplyExact(tp, pp), ep);
    }

    @Override
    public TrainerLayout layout(ModelArchitecture model, DType dtype) {
      return new MegatronLayout(model, this, dtype);
    }

    @Override
    public String toString() {
      return "tp=" + tp + ",pp=" + pp + ",ep=" + ep;
    }
  }

  /** Fully sharded data parallelism: every tensor split on dim 0 across {@code ranks}. */
  record Fsdp(int ranks) implements TrainerTopology {
    public Fsdp {
      if (ranks < 1) {
        throw new LayoutException("trainer topology fsdp=" + ranks + ": must be >= 1");
      }
    }

    @Override
    public int worldSize() {
      return ranks;
    }

    @Override
    public TrainerLayout layout(ModelArchitecture model, DType dtype) {
      return new FsdpLayout(model, this, dtype);
    }

    @Override
    public String toString() {
      return "fsdp=" + ranks;
    }
  }

  /**
   * Parses {@code tp=4,pp=1,ep=1} (missing sizes default to 1) or {@code fsdp=N}.
   *
   * @throws LayoutException naming the offending part
   */
  static TrainerTopology parse(String spec) {
    Map<String, Integer> kv = TopologySpec.parse(spec, "trainer");
    if (kv.containsKey("fsdp")) {
      if (kv.size() > 1) {
        throw new LayoutException(
            "trainer topology '" + spec + "': fsdp cannot be combined with " + kv.keySet());
      }
      return new Fsdp(kv.get("fsdp"));
    }
    for (String k : kv.keySet()) {
      if (!k.equals("tp") && !k.equals("pp") && !k.equals("ep")) {
        throw new LayoutException(
            "trainer topology '" + spec + "': unknown size '" + k + "' (use tp, pp, ep or fsdp)");
      }
    }
    return new Megatron(
        kv.getOrDefault("tp", 1), kv.getOrDefault("pp", 1), kv.getOrDefault("ep", 1));
  }
}
