package dev.mx.layout.model;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedSet;
import java.util.TreeSet;

/**
 * A decoder-only transformer as its Hugging Face {@code config.json} describes it, with every
 * global tensor under its Hugging Face name and shape in checkpoint order. Built by {@link
 * ModelConfigs}; immutable.
 */
public final class ModelArchitecture {
  private final String modelName;
  private final String source;
  private final ArchitectureKind kind;
  private final int hiddenSize;
  private final int numAttentionHeads;
  private final int numKeyValueHeads;
  private final int headDim;
  private final int intermediateSize;
  private final int numHiddenLayers;
  private final int vocabSize;
  private final boolean tieWordEmbeddings;
  private final boolean qkvBias;
  private final DType torchDtype;
  private final int numExperts;
  private final int moeIntermediateSize;
  private final int decoderSparseStep;
  private final SortedSet<Integer> mlpOnlyLayers;
  private final Mla mla;
  private final int sharedExperts;
  private final int firstKDenseReplace;
  private final boolean routerBias;
  private final Map<String, GlobalTensor> tensors;

  /**
   * Multi-head latent attention (DeepSeek-V2/V3): queries through a {@code qLoraRank} bottleneck,
   * keys and values through a {@code kvLoraRank} latent plus one shared rope key of {@code
   * qkRopeHeadDim}.
   */
  public record Mla(
      int qLoraRank, int kvLoraRank, int qkNopeHeadDim, int qkRopeHeadDim, int vHeadDim) {
    /** Rows per head of {@code q_b_proj}: {@code qk_nope_head_dim + qk_rope_head_dim}. */
    public int qkHeadDim() {
      return qkNopeHeadDim + qkRopeHeadDim;
    }

    /** Rows per head of {@code kv_b_proj}: {@code qk_nope_head_dim + v_head_dim}. */
    public int kvBHeadDim() {
      return qkNopeHeadDim + vHeadDim;
    }
  }

  /**
   * Dimensions as read from the config; {@link ModelConfigs} validates them before calling this.
   */
  record Dimensions(
      int hiddenSize,
      int numAttentionHeads,
      int numKeyValueHeads,
      int headDim,
      int intermediateSize,
      int numHiddenLayers,
      int vocabSize,
      boolean tieWordEmbeddings,
      boolean qkvBias,
      DType torchDtype,
      int numExperts,
      int moeIntermediateSize,
      int decoderSparseStep,
      SortedSet<Integer> mlpOnlyLayers,
      Mla mla,
      int sharedExperts,
      int firstKDenseReplace,
      boolean routerBias) {}

  ModelArchitecture(String modelName, String source, ArchitectureKind kind, Dimensions d) {
    this.modelName = modelName;
    this.source = source;
    this.kind = kind;
    this.hiddenSize = d.hiddenSize();
    this.numAttentionHeads = d.numAttentionHeads();
    this.numKeyValueHeads = d.numKeyValueHeads();
    this.headDim = d.headDim();
    this.intermediateSize = d.intermediateSize();
    this.numHiddenLayers = d.numHiddenLayers();
    this.vocabSize = d.vocabSize();
    this.tieWordEmbeddings = d.tieWordEmbeddings();
    this.qkvBias = d.qkvBias();
    this.torchDtype = d.torchDtype();
    this.numExperts = d.numExperts();
    this.moeIntermediateSize = d.moeIntermediateSize();
    this.decoderSparseStep = d.decoderSparseStep();
    this.mlpOnlyLayers = Collections.unmodifiableSortedSet(new TreeSet<>(d.mlpOnlyLayers()));
    this.mla = d.mla();
    this.sharedExperts = d.sharedExperts();
    this.firstKDenseReplace = d.firstKDenseReplace();
    this.routerBias = d.routerBias();
    this.tensors = Collections.unmodifiableMap(buildTensors());
  }

  private Map<String, GlobalTensor> buildTensors() {
    Map<String, GlobalTensor> m = new LinkedHashMap<>();
    long h = hiddenSize;
    add(m, "model.embed_tokens.weight", Shape.of(vocabSize, h), TensorRole.EMBEDDING, -1, -1);
    for (int l = 0; l < numHiddenLayers; l++) {
      String p = "model.layers." + l + ".";
      add(m, p + "input_layernorm.weight", Shape.of(h), TensorRole.INPUT_NORM, l, -1);
      if (mla != null) {
        mlaAttention(m, p, l);
      } else {
        standardAttention(m, p, l);
      }
      add(
          m,
          p + "post_attention_layernorm.weight",
          Shape.of(h),
          TensorRole.POST_ATTENTION_NORM,
          l,
          -1);
      if (isMoeLayer(l)) {
        add(m, p + "mlp.gate.weight", Shape.of(numExperts, h), TensorRole.ROUTER, l, -1);
        if (routerBias) {
          add(
              m,
              p + "mlp.gate.e_score_correction_bias",
              Shape.of(numExperts),
              TensorRole.ROUTER_BIAS,
              l,
              -1);
        }
        for (int e = 0; e < numExperts; e++) {
          String x = p + "mlp.experts." + e + ".";
          add(
              m,
              x + "gate_proj.weight",
              Shape.of(moeIntermediateSize, h),
              TensorRole.EXPERT_GATE_PROJ,
              l,
              e);
          add(
              m,
              x + "up_proj.weight",
              Shape.of(moeIntermediateSize, h),
              TensorRole.EXPERT_UP_PROJ,
              l,
              e);
          add(
              m,
              x + "down_proj.weight",
              Shape.of(h, moeIntermediateSize),
              TensorRole.EXPERT_DOWN_PROJ,
              l,
              e);
        }
        if (sharedExperts > 0) {
          long si = sharedIntermediateSize();
          String x = p + "mlp.shared_experts.";
          add(
              m,
              x + "gate_proj.weight",
              Shape.of(si, h),
              TensorRole.SHARED_EXPERT_GATE_PROJ,
              l,
              -1);
          add(m, x + "up_proj.weight", Shape.of(si, h), TensorRole.SHARED_EXPERT_UP_PROJ, l, -1);
          add(
              m,
              x + "down_proj.weight",
              Shape.of(h, si),
              TensorRole.SHARED_EXPERT_DOWN_PROJ,
              l,
              -1);
        }
      } else {
        add(
            m,
            p + "mlp.gate_proj.weight",
            Shape.of(intermediateSize, h),
            TensorRole.GATE_PROJ,
            l,
            -1);
        add(m, p + "mlp.up_proj.weight", Shape.of(intermediateSize, h), TensorRole.UP_PROJ, l, -1);
        add(
            m,
            p + "mlp.down_proj.weight",
            Shape.of(h, intermediateSize),
            TensorRole.DOWN_PROJ,
            l,
            -1);
      }
    }
    add(m, "model.norm.weight", Shape.of(h), TensorRole.FINAL_NORM, -1, -1);
    if (!tieWordEmbeddings) {
      add(m, "lm_head.weight", Shape.of(vocabSize, h), TensorRole.LM_HEAD, -1, -1);
    }
    return m;
  }

  private void standardAttention(Map<String, GlobalTensor> m, String p, int l) {
    long h = hiddenSize;
    long qRows = (long) numAttentionHeads * headDim;
    long kvRows = (long) numKeyValueHeads * headDim;
    add(m, p + "self_attn.q_proj.weight", Shape.of(qRows, h), TensorRole.Q_PROJ, l, -1);
    if (qkvBias) {
      add(m, p + "self_attn.q_proj.bias", Shape.of(qRows), TensorRole.Q_BIAS, l, -1);
    }
    add(m, p + "self_attn.k_proj.weight", Shape.of(kvRows, h), TensorRole.K_PROJ, l, -1);
    if (qkvBias) {
      add(m, p + "self_attn.k_proj.bias", Shape.of(kvRows), TensorRole.K_BIAS, l, -1);
    }
    add(m, p + "self_attn.v_proj.weight", Shape.of(kvRows, h), TensorRole.V_PROJ, l, -1);
    if (qkvBias) {
      add(m, p + "self_attn.v_proj.bias", Shape.of(kvRows), TensorRole.V_BIAS, l, -1);
    }
    add(m, p + "self_attn.o_proj.weight", Shape.of(h, qRows), TensorRole.O_PROJ, l, -1);
    if (kind.qkNorm()) {
      add(m, p + "self_attn.q_norm.weight", Shape.of(headDim), TensorRole.Q_NORM, l, -1);
      add(m, p + "self_attn.k_norm.weight", Shape.of(headDim), TensorRole.K_NORM, l, -1);
    }
  }

  /** DeepSeek-V3's attention tensors, in its checkpoint order. */
  private void mlaAttention(Map<String, GlobalTensor> m, String p, int l) {
    long h = hiddenSize;
    long heads = numAttentionHeads;
    String a = p + "self_attn.";
    add(m, a + "q_a_proj.weight", Shape.of(mla.qLoraRank(), h), TensorRole.Q_A_PROJ, l, -1);
    add(m, a + "q_a_layernorm.weight", Shape.of(mla.qLoraRank()), TensorRole.Q_A_NORM, l, -1);
    add(
        m,
        a + "q_b_proj.weight",
        Shape.of(heads * mla.qkHeadDim(), mla.qLoraRank()),
        TensorRole.Q_B_PROJ,
        l,
        -1);
    add(
        m,
        a + "kv_a_proj_with_mqa.weight",
        Shape.of((long) mla.kvLoraRank() + mla.qkRopeHeadDim(), h),
        TensorRole.KV_A_PROJ,
        l,
        -1);
    add(m, a + "kv_a_layernorm.weight", Shape.of(mla.kvLoraRank()), TensorRole.KV_A_NORM, l, -1);
    add(
        m,
        a + "kv_b_proj.weight",
        Shape.of(heads * mla.kvBHeadDim(), mla.kvLoraRank()),
        TensorRole.KV_B_PROJ,
        l,
        -1);
    add(m, a + "o_proj.weight", Shape.of(h, heads * mla.vHeadDim()), TensorRole.O_PROJ, l, -1);
  }

  private static void add(
      Map<String, GlobalTensor> m,
      String name,
      Shape shape,
      TensorRole role,
      int layer,
      int expert) {
    m.put(name, new GlobalTensor(name, shape, role, layer, expert));
  }

  /**
   * Whether decoder layer {@code layer} has a mixture-of-experts MLP. DeepSeek-V3: experts exist
   * and {@code layer >= first_k_dense_replace}. Qwen3-MoE: experts exist, the layer is not in
   * {@code mlp_only_layers}, and {@code (layer + 1) % decoder_sparse_step == 0}.
   */
  public boolean isMoeLayer(int layer) {
    if (kind.mla()) {
      // DeepSeek-V3's rule (moe_layer_freq 1): every layer from first_k_dense_replace on.
      return numExperts > 0 && layer >= firstKDenseReplace;
    }
    return kind.moe()
        && numExperts > 0
        && !mlpOnlyLayers.contains(layer)
        && (layer + 1) % decoderSparseStep == 0;
  }

  /** Every global tensor in checkpoint order. */
  public List<GlobalTensor> tensors() {
    return List.copyOf(tensors.values());
  }

  /** The tensors of one decoder layer, in checkpoint order. */
  public List<GlobalTensor> layerTensors(int layer) {
    List<GlobalTensor> out = new ArrayList<>();
    for (GlobalTensor t : tensors.values()) {
      if (t.layer() == layer) {
        out.add(t);
      }
    }
    return out;
  }

  public Optional<GlobalTensor> find(String name) {
    return Optional.ofNullable(tensors.get(name));
  }

  /** The global tensor named {@code name}; an error naming the model when it has none. */
  public GlobalTensor tensor(String name) {
    GlobalTensor t = tensors.get(name);
    if (t == null) {
      throw new LayoutException("model " + modelName + " has no tensor '" + name + "'");
    }
    return t;
  }

  /** Total element count of every global tensor. */
  public long parameterCount() {
    long n = 0;
    for (GlobalTensor t : tensors.values()) {
      n = Math.addExact(n, t.numel());
    }
    return n;
  }

  public String modelName() {
    return modelName;
  }

  /** Where the config came from (a resource or a file path), for error messages. */
  public String source() {
    return source;
  }

  public ArchitectureKind kind() {
    return kind;
  }

  public int hiddenSize() {
    return hiddenSize;
  }

  public int numAttentionHeads() {
    return numAttentionHeads;
  }

  public int numKeyValueHeads() {
    return numKeyValueHeads;
  }

  public int headDim() {
    return headDim;
  }

  /**
   * The dense MLP width ({@code intermediate_size}); 0 when the config has none and every layer is
   * sparse.
   */
  public int intermediateSize() {
    return intermediateSize;
  }

  public int numHiddenLayers() {
    return numHiddenLayers;
  }

  public int vocabSize() {
    return vocabSize;
  }

  public boolean tieWordEmbeddings() {
    return tieWordEmbeddings;
  }

  public boolean qkvBias() {
    return qkvBias;
  }

  public boolean qkNorm() {
    return kind.qkNorm();
  }

  /** The config's {@code torch_dtype} (or {@code dtype}), if it names one. */
  public Optional<DType> torchDtype() {
    return Optional.ofNullable(torchDtype);
  }

  /** Whether any layer is a mixture of experts. */
  public boolean isMoe() {
    for (int l = 0; l < numHiddenLayers; l++) {
      if (isMoeLayer(l)) {
        return true;
      }
    }
    return false;
  }

  public int numExperts() {
    return numExperts;
  }

  public int moeIntermediateSize() {
    return moeIntermediateSize;
  }

  public int decoderSparseStep() {
    return decoderSparseStep;
  }

  public SortedSet<Integer> mlpOnlyLayers() {
    return mlpOnlyLayers;
  }

  /** The latent-attention dimensions, when attention is MLA. */
  public Optional<Mla> mla() {
    return Optional.ofNullable(mla);
  }

  /** Shared experts per MoE layer ({@code n_shared_experts}; 0 when none). */
  public int sharedExperts() {
    return sharedExperts;
  }

  /** The width of the fused shared-expert MLP: {@code n_shared_experts · moe_intermediate_size}. */
  public long sharedIntermediateSize() {
    return (long) sharedExperts * moeIntermediateSize;
  }

  /** How many leading layers are dense ({@code first_k_dense_replace}; 0 outside DeepSeek). */
  public int firstKDenseReplace() {
    return firstKDenseReplace;
  }

  /** Whether MoE layers carry {@code mlp.gate.e_score_correction_bias}. */
  public boolean routerBias() {
    return routerBias;
  }

  @Override
  public String toString() {
    return modelName
        + " ("
        + kind.hfName()
        + ", "
        + numHiddenLayers
        + " layers, hidden "
        + hiddenSize
        + ", heads "
        + numAttentionHeads
        + "/"
        + numKeyValueHeads
        + " x "
        + headDim
        + ", vocab "
        + vocabSize
        + (isMoe() ? ", " + numExperts + " experts x " + moeIntermediateSize : "")
        + (sharedExperts > 0 ? " + " + sharedExperts + " shared" : "")
        + (mla != null ? ", MLA q/kv rank " + mla.qLoraRank() + "/" + mla.kvLoraRank() : "")
        + ")";
  }
}
