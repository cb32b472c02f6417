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
   * Megatron-Core tensor × pipeline × expert parallelism, times {@code dp} data-parallel replicas;
   * world size {@code pp · etp · ep · dp}, {@code tp · ep · dp} while the experts split like the
   * rest.
   *
   * <p>A pipeline stage's ranks form two grids, as Megatron builds them: the experts' {@code etp ×
   * ep × dp} (each expert split over {@code etp} ranks, {@code ep} expert-parallel ranks, {@code
   * dp} copies of each) and the dense weights' {@code tp × (etp·ep·dp / tp)} (split over {@code tp}
   * ranks, every other rank a replica: Megatron's data and context parallelism). With {@code etp =
   * tp} the two agree and {@code ep} is the dense weights' expert-parallel replica count, as before
   * {@code etp} existed.
   *
   * @param etp the experts' tensor-parallel size (Megatron's {@code
   *     --expert-tensor-parallel-size}); {@code tp} unless stated. {@code tp} must divide {@code
   *     etp · ep · dp}
   * @param firstStageLayers decoder layers on the first pipeline stage (Megatron's {@code
   *     --decoder-first-pipeline-num-layers}), or 0 for an even split
   * @param lastStageLayers decoder layers on the last pipeline stage ({@code
   *     --decoder-last-pipeline-num-layers}), or 0 for an even split; the other stages share the
   *     remaining layers evenly
   */
  record Megatron(
      int tp, int pp, int ep, int dp, int etp, int firstStageLayers, int lastStageLayers)
      implements TrainerTopology {
    public Megatron {
      String sizes = "trainer topology tp=" + tp + ",pp=" + pp + ",ep=" + ep + ",dp=" + dp;
      if (tp < 1 || pp < 1 || ep < 1 || dp < 1 || etp < 1) {
        throw new LayoutException(sizes + ",etp=" + etp + ": every size must be >= 1");
      }
      if (firstStageLayers < 0 || lastStageLayers < 0) {
        throw new LayoutException(
            "trainer topology: pp-first "
                + firstStageLayers
                + " and pp-last "
                + lastStageLayers
                + " must be >= 1 when given");
      }
      if (pp == 1 && (firstStageLayers > 0 || lastStageLayers > 0)) {
        throw new LayoutException(
            "trainer topology: pp-first and pp-last need pp >= 2 (one stage holds every layer)");
      }
      if ((long) etp * ep * dp % tp != 0) {
        throw new LayoutException(
            sizes
                + ",etp="
                + etp
                + ": tp must divide the "
                + (long) etp * ep * dp
                + " ranks of a stage (etp x ep x dp)");
      }
    }

    /** Experts split like the rest ({@code etp = tp}), pipeline stages even. */
    public Megatron(int tp, int pp, int ep, int dp) {
      this(tp, pp, ep, dp, tp, 0, 0);
    }

    /** One data-parallel replica. */
    public Megatron(int tp, int pp, int ep) {
      this(tp, pp, ep, 1);
    }

    /**
     * From sizes by key ({@code tp, pp, ep, dp} default to 1, {@code etp} to {@code tp}, {@code
     * pp-first} and {@code pp-last} to an even split), as {@link TrainerTopology#parse} reads them.
     */
    public static Megatron of(Map<String, Integer> sizes) {
      int tp = sizes.getOrDefault("tp", 1);
      return new Megatron(
          tp,
          sizes.getOrDefault("pp", 1),
          sizes.getOrDefault("ep", 1),
          sizes.getOrDefault("dp", 1),
          sizes.getOrDefault("etp", tp),
          sizes.getOrDefault("pp-first", 0),
          sizes.getOrDefault("pp-last", 0));
    }

    /** The same topology with {@code ep} expert-parallel ranks. */
    public Megatron withEp(int ep) {
      return new Megatron(tp, pp, ep, dp, etp, firstStageLayers, lastStageLayers);
    }

    @Override
    public int worldSize() {
      return Math.multiplyExact(pp, stageSize());
    }

    /** Ranks per pipeline stage: {@code etp · ep · dp}. */
    public int stageSize() {
      return Math.multiplyExact(Math.multiplyExact(etp, ep), dp);
    }

    @Override
    public TrainerLayout layout(ModelArchitecture model, DType dtype) {
      return new MegatronLayout(model, this, dtype);
    }

    /**
     * {@code tp=2,pp=1,ep=1}, with {@code ,dp=N} only for several replicas and {@code etp}, {@code
     * pp-first}, {@code pp-last} only where stated (older tables match).
     */
    @Override
    public String toString() {
      return "tp="
          + tp
          + ",pp="
          + pp
          + ",ep="
          + ep
          + (dp > 1 ? ",dp=" + dp : "")
          + (etp != tp ? ",etp=" + etp : "")
          + (firstStageLayers > 0 ? ",pp-first=" + firstStageLayers : "")
          + (lastStageLayers > 0 ? ",pp-last=" + lastStageLayers : "");
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
   * Parses {@code tp=4,pp=1,ep=1,dp=1} (missing sizes default to 1; {@code etp} defaults to {@code
   * tp}), with {@code pp-first=N} and {@code pp-last=N} for an uneven pipeline split, or {@code
   * fsdp=N}.
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
      if (!isMegatronKey(k)) {
        throw new LayoutException(
            "trainer topology '"
                + spec
                + "': unknown size '"
                + k
                + "' (use tp, pp, ep, dp, etp, pp-first, pp-last or fsdp)");
      }
    }
    for (String k : new String[] {"pp-first", "pp-last"}) {
      if (kv.containsKey(k) && kv.get(k) < 1) {
        throw new LayoutException(
            "trainer topology '" + spec + "': " + k + " " + kv.get(k) + " must be >= 1");
      }
    }
    return Megatron.of(kv);
  }

  /** The sizes {@link #parse} accepts for Megatron. */
  private static boolean isMegatronKey(String k) {
    return switch (k) {
      case "tp", "pp", "ep", "dp", "etp", "pp-first", "pp-last" -> true;
      default -> false;
    };
  }
}
