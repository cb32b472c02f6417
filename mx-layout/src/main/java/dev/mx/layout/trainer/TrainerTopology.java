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

  /**
   * Megatron-Core tensor × pipeline × expert parallelism, times {@code dp} data-parallel replicas
   * of the whole model; world size {@code tp · pp · ep · dp}.
   */
  record Megatron(int tp, int pp, int ep, int dp) implements TrainerTopology {
    public Megatron {
      if (tp < 1 || pp < 1 || ep < 1 || dp < 1) {
        throw new LayoutException(
            "trainer topology tp="
                + tp
                + ",pp="
                + pp
                + ",ep="
                + ep
                + ",dp="
                + dp
                + ": every size must be >= 1");
      }
    }

    /** One data-parallel replica. */
    public Megatron(int tp, int pp, int ep) {
      this(tp, pp, ep, 1);
    }

    @Override
    public int worldSize() {
      return Math.multiplyExact(Math.multiplyExact(Math.multiplyExact(tp, pp), ep), dp);
    }

    @Override
    public TrainerLayout layout(ModelArchitecture model, DType dtype) {
      return new MegatronLayout(model, this, dtype);
    }

    /**
     * {@code tp=2,pp=1,ep=1}, with {@code ,dp=N} only for several replicas (older tables match).
     */
    @Override
    public String toString() {
      return "tp=" + tp + ",pp=" + pp + ",ep=" + ep + (dp > 1 ? ",dp=" + dp : "");
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
   * Parses {@code tp=4,pp=1,ep=1,dp=1} (missing sizes default to 1) or {@code fsdp=N}.
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
      if (!k.equals("tp") && !k.equals("pp") && !k.equals("ep") && !k.equals("dp")) {
        throw new LayoutException(
            "trainer topology '"
                + spec
                + "': unknown size '"
                + k
                + "' (use tp, pp, ep, dp or fsdp)");
      }
    }
    return new Megatron(
        kv.getOrDefault("tp", 1),
        kv.getOrDefault("pp", 1),
        kv.getOrDefault("ep", 1),
        kv.getOrDefault("dp", 1));
  }
}
