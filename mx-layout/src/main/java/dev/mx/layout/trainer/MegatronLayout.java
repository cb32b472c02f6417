package dev.mx.layout.trainer;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelArchitecture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Megatron-Core's parameter layout for TP × PP × EP, with the Hugging Face aliases each rank
 * publishes.
 *
 * <ul>
 *   <li>Global rank = {@code tp + TP·(ep + EP·(dp + DP·pp))} (Megatron's tp-ep-dp-pp order, tp
 *       fastest) while the experts split like the rest; in general stage {@code pp}'s ranks are
 *       {@code pp·S + i} for its {@code S = etp·ep·dp} places {@code i}. The {@code dp}
 *       data-parallel replicas hold the same weights.
 *   <li>Stage {@code pp} holds layers {@code [pp·L/PP, (pp+1)·L/PP)}, or with {@code pp-first} /
 *       {@code pp-last} (Megatron's {@code --decoder-first/last-pipeline-num-layers}) that many on
 *       the first / last stage and the rest split evenly over the others ({@link #stageLayers});
 *       buffer and published names carry <em>global</em> layer numbers, so two stages never
 *       collide. The embedding lives on the first stage, the final norm and (untied) output layer
 *       on the last.
 *   <li>Vocabulary rows are padded to a multiple of {@code 128·TP} and split evenly; padding rows
 *       are zero and never published.
 *   <li>{@code linear_qkv} holds the fused rows in by-head-group order (per KV group: its query
 *       heads, one K head, one V head), split evenly by rows across TP; it publishes q/k/v aliases
 *       by band intersection, so rows need not align with groups and KV heads may be fewer than TP
 *       ranks. Biases likewise.
 *   <li>{@code linear_fc1} holds this rank's gate rows then its up rows; {@code linear_proj} and
 *       {@code linear_fc2} are row-parallel (column slices).
 *   <li>MLA (DeepSeek-V3, Kimi-K2): {@code linear_q_down_proj} and {@code linear_kv_down_proj}
 *       replicated, {@code linear_q_up_proj} and {@code linear_kv_up_proj} column-parallel by heads
 *       with the latent norms as their {@code layer_norm_weight}, {@code linear_proj} row-parallel.
 *       Shared experts are a TP-split dense MLP ({@code mlp.shared_experts.*}), replicated across
 *       EP ranks; the router's {@code expert_bias} is replicated.
 *   <li>Norms and the router are replicated; TP rank 0 owns them. Experts are split across EP ranks
 *       ({@code E/EP} each, local buffers {@code linear_fc1.weight<j>} TE-style), each split across
 *       {@code etp} ranks like the dense MLP across TP. Rank {@code i} of a stage is {@code etp +
 *       ETP·(ep + EP·dp)} in the experts' grid and {@code tp + TP·r} in the dense weights' ({@link
 *       TrainerTopology.Megatron}); with {@code etp = tp} the two agree. Replica 0 owns a dense box
 *       ({@code r = 0}: EP rank 0 of DP rank 0), DP rank 0 an expert box.
 *   <li>Every rank publishes every alias it holds, replicas included ({@link
 *       TrainerRankLayout#aliases()}); {@link AliasShard#published()} marks the owner, the lowest
 *       rank that holds the box, which is the offer a receiver without replica spreading reads.
 * </ul>
 */
public final class MegatronLayout implements TrainerLayout {
  /** Megatron's {@code make_vocab_size_divisible_by} default. */
  public static final int VOCAB_DIVISOR = 128;

  private final ModelArchitecture model;
  private final TrainerTopology.Megatron topology;
  private final DType dtype;

  /** Stage {@code s} holds layers {@code [stageBounds[s], stageBounds[s+1])}. */
  private final int[] stageBounds;

  public MegatronLayout(ModelArchitecture model, TrainerTopology.Megatron topology, DType dtype) {
    this.model = model;
    this.topology = topology;
    this.dtype = dtype;
    String where = "trainer " + topology + " for " + model.modelName() + ": ";
    this.stageBounds = stageBounds(where);
    validate(where);
  }

  private void validate(String where) {
    int tp = topology.tp();
    // Whole attention heads per rank, as Megatron requires. KV heads and tp must divide one
    // another as for vLLM: fewer KV heads than tp stays valid (the fused rows split in bands).
    if (model.numAttentionHeads() % tp != 0) {
      throw new LayoutException(
          where
              + "num_attention_heads "
              + model.numAttentionHeads()
              + " is not divisible by tp "
              + tp);
    }
    if (model.mla().isEmpty()) {
      validateFusedQkv(where);
    }
    validateMlp(where);
  }

  private int[] stageBounds(String where) {
    int layers = model.numHiddenLayers();
    int pp = topology.pp();
    int first = topology.firstStageLayers();
    int last = topology.lastStageLayers();
    if (first == 0 && last == 0 && layers % pp != 0) {
      throw new LayoutException(
          where
              + "num_hidden_layers "
              + layers
              + " is not divisible by pp "
              + pp
              + " (pp-first=N and pp-last=N split it unevenly, as Megatron's"
              + " --decoder-first/last-pipeline-num-layers)");
    }
    // An even split is the case with neither end stated: every stage holds layers / pp.
    int others = pp - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
    int rest = layers - first - last;
    if (rest < 0 || (others == 0 ? rest != 0 : rest % others != 0 || rest / others == 0)) {
      throw new LayoutException(
          where
              + "num_hidden_layers "
              + layers
              + (first > 0 ? " minus pp-first " + first : "")
              + (last > 0 ? " minus pp-last " + last : "")
              + " leaves "
              + rest
              + " layers, which "
              + (others == 0
                  ? "no other stage holds"
                  : "do not split evenly, at least one each, over the other "
                      + others
                      + " stages"));
    }
    int each = others == 0 ? 0 : rest / others;
    int[] bounds = new int[pp + 1];
    for (int st = 0; st < pp; st++) {
      int n = st == 0 && first > 0 ? first : st == pp - 1 && last > 0 ? last : each;
      bounds[st + 1] = bounds[st] + n;
    }
    return bounds;
  }

  /** The decoder layers of pipeline stage {@code stage}: {@code [from, to)}. */
  public int[] stageLayers(int stage) {
    return new int[] {stageBounds[stage], stageBounds[stage + 1]};
  }

  private void validateFusedQkv(String where) {
    int tp = topology.tp();
    int kv = model.numKeyValueHeads();
    if (kv >= tp ? kv % tp != 0 : tp % kv != 0) {
      throw new LayoutException(
          where + "num_key_value_heads " + kv + " and tp " + tp + " must divide one another");
    }
    if (fusedQkvRows() % tp != 0) {
      throw new LayoutException(
          where
              + "the "
              + fusedQkvRows()
              + " fused QKV rows (num_attention_heads "
              + model.numAttentionHeads()
              + ", num_key_value_heads "
              + model.numKeyValueHeads()
              + ", head_dim "
              + model.headDim()
              + ") do not split evenly across tp "
              + tp);
    }
    if ((long) model.numAttentionHeads() * model.headDim() % tp != 0) {
      throw new LayoutException(
          where
              + "linear_proj columns num_attention_heads x head_dim = "
              + (long) model.numAttentionHeads() * model.headDim()
              + " are not divisible by tp "
              + tp);
    }
  }

  private void validateMlp(String where) {
    int tp = topology.tp();
    boolean anyDense = false;
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      anyDense |= !model.isMoeLayer(l);
    }
    if (anyDense && model.intermediateSize() % tp != 0) {
      throw new LayoutException(
          where
              + "intermediate_size "
              + model.intermediateSize()
              + " is not divisible by tp "
              + tp);
    }
    if (model.isMoe()) {
      if (model.numExperts() % topology.ep() != 0) {
        throw new LayoutException(
            where
                + "num_experts "
                + model.numExperts()
                + " is not divisible by ep "
                + topology.ep());
      }
      if (model.moeIntermediateSize() % topology.etp() != 0) {
        throw new LayoutException(
            where
                + "moe_intermediate_size "
                + model.moeIntermediateSize()
                + " is not divisible by "
                + (topology.etp() == tp ? "tp " : "etp ")
                + topology.etp());
      }
    } else if (topology.ep() > 1) {
      throw new LayoutException(
          where + "ep " + topology.ep() + " needs a mixture-of-experts model");
    }
  }

  private long fusedQkvRows() {
    return (long) (model.numAttentionHeads() + 2 * model.numKeyValueHeads()) * model.headDim();
  }

  /**
   * The vocabulary rows Megatron allocates: {@code vocab_size} rounded up to a multiple of {@code
   * 128·TP}.
   */
  public long paddedVocab() {
    long m = (long) VOCAB_DIVISOR * topology.tp();
    return (model.vocabSize() + m - 1) / m * m;
  }

  @Override
  public ModelArchitecture model() {
    return model;
  }

  @Override
  public TrainerTopology.Megatron topology() {
    return topology;
  }

  @Override
  public DType dtype() {
    return dtype;
  }

  /** The global rank of coordinates {@code (tp, pp, ep)} in data-parallel replica 0. */
  public int globalRank(int tp, int pp, int ep) {
    return globalRank(tp, pp, ep, 0);
  }

  /** The global rank of coordinates {@code (tp, pp, ep, dp)} (the experts split like the rest). */
  public int globalRank(int tp, int pp, int ep, int dp) {
    return tp + topology.tp() * (ep + topology.ep() * (dp + topology.dp() * pp));
  }

  @Override
  public TrainerRankLayout rank(int rank) {
    if (rank < 0 || rank >= worldSize()) {
      throw new LayoutException(
          "trainer rank " + rank + " is outside [0, " + worldSize() + ") for " + topology);
    }
    return new RankBuilder(rank % topology.stageSize(), rank / topology.stageSize()).build(rank);
  }

  /**
   * Collects the specs of one rank (its place in a stage and the stage) and resolves them into
   * buffers and aliases.
   */
  private final class RankBuilder {
    private final int pp;
    private final int tpSize = topology.tp();

    /** The dense weights' grid: TP rank, and which of the stage's replicas of them. */
    private final int tp;

    private final int replica;

    /** The experts' grid: expert-TP rank, expert-parallel rank, data-parallel copy. */
    private final int etp;

    private final int ep;
    private final int dp;
    private final int etpSize = topology.etp();
    private final long hidden = model.hiddenSize();
    private final List<Map.Entry<MegatronTensorSpec, Boolean>> specs = new ArrayList<>();

    RankBuilder(int inStage, int pp) {
      this.pp = pp;
      this.tp = inStage % tpSize;
      this.replica = inStage / tpSize;
      this.etp = inStage % etpSize;
      this.ep = inStage / etpSize % topology.ep();
      this.dp = inStage / (etpSize * topology.ep());
    }

    TrainerRankLayout build(int rank) {
      collect();
      List<LocalBuffer> buffers = new ArrayList<>();
      List<AliasShard> aliases = new ArrayList<>();
      for (Map.Entry<MegatronTensorSpec, Boolean> e : specs) {
        MegatronTensorSpec s = e.getKey();
        buffers.add(new LocalBuffer(s.name(), dtype, s.localShape()));
        aliases.addAll(MegatronAliases.resolve(s, e.getValue()));
      }
      return new TrainerRankLayout(
          rank,
          "tp" + tp + "-pp" + pp + "-ep" + ep + (topology.dp() > 1 ? "-dp" + dp : ""),
          dtype,
          buffers,
          aliases);
    }

    void collect() {
      if (pp == 0) {
        vocab("embedding.word_embeddings.weight", "model.embed_tokens.weight");
      }
      for (int l = stageBounds[pp]; l < stageBounds[pp + 1]; l++) {
        layer(l);
      }
      if (pp == topology.pp() - 1) {
        replicated("decoder.final_layernorm.weight", "model.norm.weight", Shape.of(hidden));
        if (!model.tieWordEmbeddings()) {
          vocab("output_layer.weight", "lm_head.weight");
        }
      }
    }

    private void layer(int l) {
      String m = "decoder.layers." + l + ".";
      String h = "model.layers." + l + ".";
      long hd = model.headDim();
      long qCols = model.numAttentionHeads() * hd;
      if (model.mla().isPresent()) {
        mlaAttention(m, h, model.mla().get());
      } else {
        replicated(
            m + "self_attention.linear_qkv.layer_norm_weight",
            h + "input_layernorm.weight",
            Shape.of(hidden));
        qkv(m + "self_attention.linear_qkv.weight", h, "weight", true);
        if (model.qkvBias()) {
          qkv(m + "self_attention.linear_qkv.bias", h, "bias", false);
        }
        if (model.qkNorm()) {
          replicated(
              m + "self_attention.q_layernorm.weight", h + "self_attn.q_norm.weight", Shape.of(hd));
          replicated(
              m + "self_attention.k_layernorm.weight", h + "self_attn.k_norm.weight", Shape.of(hd));
        }
        rowParallel(
            m + "self_attention.linear_proj.weight",
            h + "self_attn.o_proj.weight",
            qCols,
            MegatronRole.ROW,
            false);
      }
      if (model.isMoeLayer(l)) {
        replicated(
            m + "pre_mlp_layernorm.weight",
            h + "post_attention_layernorm.weight",
            Shape.of(hidden));
        replicated(
            m + "mlp.router.weight", h + "mlp.gate.weight", Shape.of(model.numExperts(), hidden));
        if (model.routerBias()) {
          replicated(
              m + "mlp.router.expert_bias",
              h + "mlp.gate.e_score_correction_bias",
              Shape.of(model.numExperts()));
        }
        if (model.sharedExperts() > 0) {
          // Megatron's SharedExpertMLP: a dense gated MLP, TP-split, replicated across EP ranks.
          gatedFc1(
              m + "mlp.shared_experts.linear_fc1.weight",
              h + "mlp.shared_experts.",
              model.sharedIntermediateSize(),
              MegatronRole.GATED_MLP_COLUMN,
              false);
          rowParallel(
              m + "mlp.shared_experts.linear_fc2.weight",
              h + "mlp.shared_experts.down_proj.weight",
              model.sharedIntermediateSize(),
              MegatronRole.ROW,
              false);
        }
        int perRank = model.numExperts() / topology.ep();
        for (int j = 0; j < perRank; j++) {
          int e = ep * perRank + j;
          String x = h + "mlp.experts." + e + ".";
          gatedFc1(
              m + "mlp.experts.linear_fc1.weight" + j,
              x,
              model.moeIntermediateSize(),
              MegatronRole.EXPERT_COLUMN,
              true);
          rowParallel(
              m + "mlp.experts.linear_fc2.weight" + j,
              x + "down_proj.weight",
              model.moeIntermediateSize(),
              MegatronRole.EXPERT_ROW,
              true);
        }
      } else {
        replicated(
            m + "mlp.linear_fc1.layer_norm_weight",
            h + "post_attention_layernorm.weight",
            Shape.of(hidden));
        gatedFc1(
            m + "mlp.linear_fc1.weight",
            h + "mlp.",
            model.intermediateSize(),
            MegatronRole.GATED_MLP_COLUMN,
            false);
        rowParallel(
            m + "mlp.linear_fc2.weight",
            h + "mlp.down_proj.weight",
            model.intermediateSize(),
            MegatronRole.ROW,
            false);
      }
    }

    /**
     * Megatron-Core's MLASelfAttention: the down projections are duplicated on every TP rank, the
     * up projections (with the q/kv latent norms fused in as {@code layer_norm_weight}) are
     * column-parallel by heads, {@code linear_proj} is row-parallel.
     */
    private void mlaAttention(String m, String h, ModelArchitecture.Mla mla) {
      long heads = model.numAttentionHeads();
      String a = h + "self_attn.";
      replicated(m + "input_layernorm.weight", h + "input_layernorm.weight", Shape.of(hidden));
      replicated(
          m + "self_attention.linear_q_down_proj.weight",
          a + "q_a_proj.weight",
          Shape.of(mla.qLoraRank(), hidden));
      replicated(
          m + "self_attention.linear_q_up_proj.layer_norm_weight",
          a + "q_a_layernorm.weight",
          Shape.of(mla.qLoraRank()));
      column(
          m + "self_attention.linear_q_up_proj.weight",
          a + "q_b_proj.weight",
          heads * mla.qkHeadDim(),
          mla.qLoraRank());
      replicated(
          m + "self_attention.linear_kv_down_proj.weight",
          a + "kv_a_proj_with_mqa.weight",
          Shape.of((long) mla.kvLoraRank() + mla.qkRopeHeadDim(), hidden));
      replicated(
          m + "self_attention.linear_kv_up_proj.layer_norm_weight",
          a + "kv_a_layernorm.weight",
          Shape.of(mla.kvLoraRank()));
      column(
          m + "self_attention.linear_kv_up_proj.weight",
          a + "kv_b_proj.weight",
          heads * mla.kvBHeadDim(),
          mla.kvLoraRank());
      rowParallel(
          m + "self_attention.linear_proj.weight",
          a + "o_proj.weight",
          heads * mla.vHeadDim(),
          MegatronRole.ROW,
          false);
    }

    /** Rows {@code [tp·R/TP, (tp+1)·R/TP)} of a column-parallel {@code R × cols} weight. */
    private void column(String name, String hf, long totalRows, long cols) {
      long rows = totalRows / tpSize;
      add(
          MegatronTensorSpec.shard(
              name,
              Shape.of(rows, cols),
              MegatronRole.COLUMN,
              List.of(hf),
              Shape.of(totalRows, cols),
              0,
              tp * rows,
              (tp + 1) * rows,
              Map.of()),
          false,
          false);
    }

    private void add(MegatronTensorSpec spec, boolean replicaOnAllTp, boolean expert) {
      // The owner: the lowest rank holding the box. Its replicas publish it too (as aliases).
      boolean published = expert ? dp == 0 : replica == 0 && (!replicaOnAllTp || tp == 0);
      specs.add(Map.entry(spec, published));
    }

    private void replicated(String name, String hf, Shape shape) {
      add(
          MegatronTensorSpec.replicate(
              name, shape, MegatronRole.REPLICATED, List.of(hf), shape, Map.of()),
          true,
          false);
    }

    private void vocab(String name, String hf) {
      long rows = paddedVocab() / tpSize;
      add(
          MegatronTensorSpec.shard(
              name,
              Shape.of(rows, hidden),
              MegatronRole.VOCAB_PARALLEL,
              List.of(hf),
              Shape.of(model.vocabSize(), hidden),
              0,
              tp * rows,
              (tp + 1) * rows,
              Map.of()),
          false,
          false);
    }

    private void qkv(String name, String hfPrefix, String suffix, boolean weight) {
      long total = fusedQkvRows();
      long rows = total / tpSize;
      Shape local = weight ? Shape.of(rows, hidden) : Shape.of(rows);
      Shape global = weight ? Shape.of(total, hidden) : Shape.of(total);
      List<String> hf =
          List.of(
              hfPrefix + "self_attn.q_proj." + suffix,
              hfPrefix + "self_attn.k_proj." + suffix,
              hfPrefix + "self_attn.v_proj." + suffix);
      Map<String, String> extras =
          Map.of(
              "num_heads",
              Integer.toString(model.numAttentionHeads()),
              "num_kv_heads",
              Integer.toString(model.numKeyValueHeads()),
              "head_dim",
              Integer.toString(model.headDim()),
              "qkv_interleave",
              "by_head");
      add(
          MegatronTensorSpec.shard(
              name,
              local,
              MegatronRole.QKV_COLUMN,
              hf,
              global,
              0,
              tp * rows,
              (tp + 1) * rows,
              extras),
          false,
          false);
    }

    private void gatedFc1(
        String name, String hfPrefix, long intermediate, MegatronRole role, boolean expert) {
      int at = expert ? etp : tp;
      long rows = 2 * intermediate / (expert ? etpSize : tpSize);
      add(
          MegatronTensorSpec.shard(
              name,
              Shape.of(rows, hidden),
              role,
              List.of(hfPrefix + "gate_proj.weight", hfPrefix + "up_proj.weight"),
              Shape.of(2 * intermediate, hidden),
              0,
              at * rows,
              (at + 1) * rows,
              Map.of("gated_mlp_order", "gate_then_up")),
          false,
          expert);
    }

    private void rowParallel(
        String name, String hf, long columns, MegatronRole role, boolean expert) {
      int at = expert ? etp : tp;
      long cols = columns / (expert ? etpSize : tpSize);
      add(
          MegatronTensorSpec.shard(
              name,
              Shape.of(hidden, cols),
              role,
              List.of(hf),
              Shape.of(hidden, columns),
              1,
              at * cols,
              (at + 1) * cols,
              Map.of()),
          false,
          expert);
    }
  }
}
