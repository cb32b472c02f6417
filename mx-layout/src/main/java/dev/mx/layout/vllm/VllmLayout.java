package dev.mx.layout.vllm;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * vLLM's parameters for one inference rank, and the copies its weight loader performs from the
 * global Hugging Face tensors, as a {@link GeometrySource}:
 *
 * <ul>
 *   <li>{@code model.embed_tokens.weight} and untied {@code lm_head.weight}: vocabulary padded to a
 *       multiple of 64, {@code padded/T} consecutive rows per rank; rows past {@code vocab_size}
 *       are never written.
 *   <li>{@code self_attn.qkv_proj.weight} (and {@code .bias}): this rank's {@code heads/T} query
 *       heads, then its K heads, then its V heads; with KV heads ≥ T a rank holds {@code KV/T}
 *       heads from {@code r·KV/T}, with fewer KV heads than T it holds one, index {@code r /
 *       (T/KV)}.
 *   <li>{@code o_proj} and {@code down_proj}: column slices; {@code gate_up_proj}: this rank's gate
 *       rows then its up rows; norms, {@code q_norm}/{@code k_norm} and the router ({@code
 *       mlp.gate.weight}) replicated.
 *   <li>MoE: {@code mlp.experts.w13_weight} (E_local, 2·I_local, hidden), per expert gate rows then
 *       up rows; {@code mlp.experts.w2_weight} (E_local, hidden, I_local). {@code ep=1}: all
 *       experts, intermediate sliced by T; {@code ep>1}: experts {@code [r·E/ep, (r+1)·E/ep)} whole
 *       ({@code ep} is T, or T times the data-parallel size: then everything but the experts
 *       follows attention rank {@code r % T}). With an {@link ExpertPlacement} (EPLB) the first
 *       dimension counts physical slots instead, each copied from its logical expert; a logical
 *       expert that fills two slots of one rank is one source read twice, which shard bounding
 *       reads once and copies locally.
 *   <li>DeepSeek-V3 / Kimi-K2: {@code fused_qkv_a_proj} (q_a_proj then kv_a_proj_with_mqa rows),
 *       {@code q_a_layernorm}, {@code kv_a_layernorm} replicated; {@code q_b_proj}, {@code
 *       kv_b_proj} row slices by heads; router bias replicated; {@code
 *       mlp.shared_experts.gate_up_proj} / {@code down_proj} split as the dense MLP.
 * </ul>
 *
 * Copies are op chains of {@code narrow} (none when the whole source is taken) into row-major
 * destinations.
 */
public final class VllmLayout implements GeometrySource {
  /** vLLM's {@code DEFAULT_VOCAB_PADDING_SIZE}. */
  public static final int VOCAB_PADDING = 64;

  private final ModelArchitecture model;
  private final InferenceTopology topology;
  private final int rank;

  /** The attention rank: {@code rank} unless data-parallel groups share the experts. */
  private final int tpRank;

  private final DType dtype;
  private final ExpertPlacement experts;

  /** Whether the caller gave an expert placement (else the trainer's order). */
  private final boolean remapped;

  private final Map<String, ParamSpec> params = new LinkedHashMap<>();

  /** Per parameter, the elements no copy writes on purpose (vocabulary padding rows). */
  private final Map<String, List<Box>> padding = new LinkedHashMap<>();

  /** Copies by source name, in the order the loader would perform them. */
  private final Map<String, List<RecordedCopy>> copiesBySource = new LinkedHashMap<>();

  public VllmLayout(ModelArchitecture model, InferenceTopology topology, int rank, DType dtype) {
    this(model, topology, rank, dtype, null);
  }

  /**
   * A rank whose expert slots follow {@code placement} (null: the trainer's order, one slot per
   * expert).
   */
  public VllmLayout(
      ModelArchitecture model,
      InferenceTopology topology,
      int rank,
      DType dtype,
      ExpertPlacement placement) {
    this.model = model;
    this.topology = topology;
    this.rank = rank;
    this.tpRank = topology.tpRank(rank);
    this.dtype = dtype;
    this.remapped = placement != null;
    this.experts = remapped || !model.isMoe() ? placement : ExpertPlacement.identity(model);
    if (rank < 0 || rank >= topology.worldSize()) {
      throw new LayoutException(
          "inference rank " + rank + " is outside [0, " + topology.worldSize() + ")");
    }
    validate();
    build();
  }

  private String where() {
    return "inference " + topology + " for " + model.modelName() + ": ";
  }

  private void validate() {
    int t = topology.tp();
    int kv = model.numKeyValueHeads();
    if (model.numAttentionHeads() % t != 0) {
      throw new LayoutException(
          where()
              + "num_attention_heads "
              + model.numAttentionHeads()
              + " is not divisible by tp "
              + t);
    }
    if (model.mla().isEmpty() && (kv >= t ? kv % t != 0 : t % kv != 0)) {
      throw new LayoutException(
          where() + "num_key_value_heads " + kv + " and tp " + t + " must divide one another");
    }
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      if (!model.isMoeLayer(l) && model.intermediateSize() % t != 0) {
        throw new LayoutException(
            where()
                + "intermediate_size "
                + model.intermediateSize()
                + " is not divisible by tp "
                + t);
      }
    }
    if (model.isMoe()) {
      if (remapped) {
        try {
          experts.requireFits(topology);
        } catch (LayoutException e) {
          throw new LayoutException(where() + "expert placement: " + e.getMessage(), e);
        }
      }
      if (!remapped && topology.expertParallel() && model.numExperts() % topology.ep() != 0) {
        throw new LayoutException(
            where()
                + "num_experts "
                + model.numExperts()
                + " is not divisible by ep "
                + topology.ep());
      }
      if (model.sharedIntermediateSize() % t != 0) {
        throw new LayoutException(
            where()
                + "shared experts' intermediate "
                + model.sharedIntermediateSize()
                + " is not divisible by tp "
                + t);
      }
      if (!topology.expertParallel() && model.moeIntermediateSize() % t != 0) {
        throw new LayoutException(
            where()
                + "moe_intermediate_size "
                + model.moeIntermediateSize()
                + " is not divisible by tp "
                + t);
      }
    } else if (topology.expertParallel()) {
      throw new LayoutException(
          where() + "ep " + topology.ep() + " needs a mixture-of-experts model");
    }
    if (paddedVocab() % t != 0) {
      throw new LayoutException(
          where() + "padded vocabulary " + paddedVocab() + " is not divisible by tp " + t);
    }
  }

  /** {@code vocab_size} rounded up to a multiple of {@link #VOCAB_PADDING}. */
  public long paddedVocab() {
    return (model.vocabSize() + VOCAB_PADDING - 1L) / VOCAB_PADDING * VOCAB_PADDING;
  }

  public ModelArchitecture model() {
    return model;
  }

  public InferenceTopology topology() {
    return topology;
  }

  public int rank() {
    return rank;
  }

  public DType dtype() {
    return dtype;
  }

  /** Which logical expert each physical slot holds; null for a dense model. */
  public ExpertPlacement expertPlacement() {
    return experts;
  }

  /** Every parameter of this rank with its shape and dtype, in load order. */
  public Map<String, ParamSpec> params() {
    return Collections.unmodifiableMap(params);
  }

  /** Every copy for the full set of the model's global tensors, in checkpoint order. */
  public List<RecordedCopy> copies() {
    List<RecordedCopy> all = new ArrayList<>();
    copiesBySource.values().forEach(all::addAll);
    return all;
  }

  /** The copies that read {@code source}; empty when this rank needs none of it. */
  public List<RecordedCopy> copiesOf(String source) {
    return copiesBySource.getOrDefault(source, List.of());
  }

  /** A manifest offering every global tensor of {@code model} in {@code dtype}. */
  public static List<ManifestEntry> manifest(ModelArchitecture model, DType dtype) {
    List<ManifestEntry> m = new ArrayList<>();
    for (GlobalTensor t : model.tensors()) {
      m.add(new ManifestEntry(t.name(), dtype, t.shape()));
    }
    return m;
  }

  /**
   * The copies for each offered source, in manifest order. A source the model lacks, or offered
   * with another shape, is reported unsupported with the reason; sources this rank does not need
   * (another rank's experts) yield no copies.
   */
  @Override
  public Capture capture(List<ManifestEntry> manifest) {
    List<RecordedCopy> copies = new ArrayList<>();
    List<String> unsupported = new ArrayList<>();
    Map<String, String> reasons = new LinkedHashMap<>();
    for (ManifestEntry e : manifest) {
      var t = model.find(e.name());
      if (t.isEmpty()) {
        unsupported.add(e.name());
        reasons.put(
            e.name(),
            "model " + model.modelName() + " has no parameter that loads '" + e.name() + "'");
      } else if (!t.get().shape().equals(e.globalShape())) {
        unsupported.add(e.name());
        reasons.put(
            e.name(),
            "source '"
                + e.name()
                + "' is offered with shape "
                + e.globalShape()
                + " but "
                + model.modelName()
                + " expects "
                + t.get().shape());
      } else {
        copies.addAll(copiesOf(e.name()));
      }
    }
    return new Capture(new CaptureResult(copies, unsupported, 0, reasons), params, padding);
  }

  // ---- construction
  // -------------------------------------------------------------------------------------

  private void build() {
    int t = topology.tp();
    long h = model.hiddenSize();
    long hd = model.headDim();
    long vocabRows = paddedVocab() / t;
    vocab("model.embed_tokens.weight", vocabRows);
    long qHeads = model.numAttentionHeads() / t;
    int kv = model.numKeyValueHeads();
    long kvHeads = kv >= t ? kv / t : 1;
    long kvStart = kv >= t ? (long) tpRank * kv / t : tpRank / (t / kv);
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      String p = "model.layers." + l + ".";
      whole(p + "input_layernorm.weight");
      if (model.mla().isPresent()) {
        mla(p, model.mla().get());
      } else {
        qkv(p, "weight", qHeads, kvHeads, kvStart);
        if (model.qkvBias()) {
          qkv(p, "bias", qHeads, kvHeads, kvStart);
        }
        columnSlice(p + "self_attn.o_proj.weight", model.numAttentionHeads() * hd);
      }
      if (model.qkNorm()) {
        whole(p + "self_attn.q_norm.weight");
        whole(p + "self_attn.k_norm.weight");
      }
      whole(p + "post_attention_layernorm.weight");
      if (model.isMoeLayer(l)) {
        whole(p + "mlp.gate.weight");
        if (model.routerBias()) {
          whole(p + "mlp.gate.e_score_correction_bias");
        }
        experts(l, p);
        if (model.sharedExperts() > 0) {
          gateUpDown(p + "mlp.shared_experts.", model.sharedIntermediateSize());
        }
      } else {
        gateUpDown(p + "mlp.", model.intermediateSize());
      }
    }
    whole("model.norm.weight");
    if (!model.tieWordEmbeddings()) {
      vocab("lm_head.weight", vocabRows);
    }
  }

  /**
   * A dense gated MLP under {@code prefix}: {@code gate_up_proj} (this rank's gate rows then its up
   * rows) and the column slice {@code down_proj}.
   */
  private void gateUpDown(String prefix, long intermediate) {
    long h = model.hiddenSize();
    long rows = intermediate / topology.tp();
    String gu = prefix + "gate_up_proj.weight";
    declare(gu, Shape.of(2 * rows, h));
    rowsInto(prefix + "gate_proj.weight", gu, tpRank * rows, rows, intermediate, 0);
    rowsInto(prefix + "up_proj.weight", gu, tpRank * rows, rows, intermediate, rows * h);
    columnSlice(prefix + "down_proj.weight", intermediate);
  }

  /**
   * vLLM's DeepSeek-V2/V3 attention: {@code fused_qkv_a_proj} (q_a_proj rows then
   * kv_a_proj_with_mqa rows) and the latent norms replicated, {@code q_b_proj} and {@code
   * kv_b_proj} column-parallel by heads, {@code o_proj} row-parallel.
   */
  private void mla(String p, ModelArchitecture.Mla mla) {
    long h = model.hiddenSize();
    String a = p + "self_attn.";
    long kvA = (long) mla.kvLoraRank() + mla.qkRopeHeadDim();
    String fused = a + "fused_qkv_a_proj.weight";
    declare(fused, Shape.of(mla.qLoraRank() + kvA, h));
    rowsInto(a + "q_a_proj.weight", fused, 0, mla.qLoraRank(), mla.qLoraRank(), 0);
    rowsInto(a + "kv_a_proj_with_mqa.weight", fused, 0, kvA, kvA, mla.qLoraRank() * h);
    whole(a + "q_a_layernorm.weight");
    whole(a + "kv_a_layernorm.weight");
    long heads = model.numAttentionHeads();
    headRows(a + "q_b_proj.weight", heads * mla.qkHeadDim(), mla.qLoraRank());
    headRows(a + "kv_b_proj.weight", heads * mla.kvBHeadDim(), mla.kvLoraRank());
    columnSlice(a + "o_proj.weight", heads * mla.vHeadDim());
  }

  /** This rank's {@code total/T} rows of a column-parallel {@code source} into a new parameter. */
  private void headRows(String source, long total, long cols) {
    long rows = total / topology.tp();
    declare(source, Shape.of(rows, cols));
    rowsInto(source, source, tpRank * rows, rows, total, 0);
  }

  private void qkv(String p, String suffix, long qHeads, long kvHeads, long kvStart) {
    long hd = model.headDim();
    boolean weight = suffix.equals("weight");
    long rowElems = weight ? model.hiddenSize() : 1;
    long qRows = qHeads * hd;
    long kvRows = kvHeads * hd;
    String param = p + "self_attn.qkv_proj." + suffix;
    long rows = qRows + 2 * kvRows;
    declare(param, weight ? Shape.of(rows, model.hiddenSize()) : Shape.of(rows));
    long qTotal = (long) model.numAttentionHeads() * hd;
    long kvTotal = (long) model.numKeyValueHeads() * hd;
    rowsInto(p + "self_attn.q_proj." + suffix, param, tpRank * qRows, qRows, qTotal, 0);
    rowsInto(
        p + "self_attn.k_proj." + suffix, param, kvStart * hd, kvRows, kvTotal, qRows * rowElems);
    rowsInto(
        p + "self_attn.v_proj." + suffix,
        param,
        kvStart * hd,
        kvRows,
        kvTotal,
        (qRows + kvRows) * rowElems);
  }

  private void experts(int layer, String p) {
    long h = model.hiddenSize();
    int slots = experts.slotCount(layer);
    long im = model.moeIntermediateSize();
    boolean ep = topology.expertParallel();
    int local = ep ? slots / topology.ep() : slots;
    int first = ep ? rank * local : 0;
    long il = ep ? im : im / topology.tp();
    long sliceStart = ep ? 0 : tpRank * il;
    String w13 = p + "mlp.experts.w13_weight";
    String w2 = p + "mlp.experts.w2_weight";
    declare(w13, Shape.of(local, 2 * il, h));
    declare(w2, Shape.of(local, h, il));
    for (int j = 0; j < local; j++) {
      String x = p + "mlp.experts." + experts.logical(layer, first + j) + ".";
      long w13Base = (long) j * 2 * il * h;
      rowsInto(x + "gate_proj.weight", w13, sliceStart, il, im, w13Base);
      rowsInto(x + "up_proj.weight", w13, sliceStart, il, im, w13Base + il * h);
      columnsInto(x + "down_proj.weight", w2, sliceStart, il, im, j * h * il);
    }
  }

  private void declare(String param, Shape shape) {
    if (params.put(param, new ParamSpec(shape, dtype)) != null) {
      throw new IllegalStateException("parameter '" + param + "' declared twice");
    }
  }

  /** A replicated parameter copied whole from the source of the same name. */
  private void whole(String name) {
    Shape s = model.tensor(name).shape();
    declare(name, s);
    record(RecordedCopy.contiguous(name, List.of(), name, 0, s, dtype));
  }

  /**
   * Vocabulary rows {@code [rank·rows, (rank+1)·rows)} of the padded table; only real rows are
   * copied.
   */
  private void vocab(String name, long rows) {
    long h = model.hiddenSize();
    declare(name, Shape.of(rows, h));
    long lo = tpRank * rows;
    long real = Math.min(rows, Math.max(0, model.vocabSize() - lo));
    if (real > 0) {
      rowsInto(name, name, lo, real, model.vocabSize(), 0);
    }
    if (real < rows) {
      // Rows past vocab_size are padding: declared so the receiver's coverage gate does not expect
      // them.
      padding.put(name, List.of(new Box(new long[] {real, 0}, new long[] {rows, h})));
    }
  }

  /**
   * Rows {@code [start, start+count)} of {@code source} (which has {@code total} rows) into {@code
   * param} at element {@code destOffset}, row-major.
   */
  private void rowsInto(
      String source, String param, long start, long count, long total, long destOffset) {
    Shape src = model.tensor(source).shape();
    long[] dims = src.dims();
    dims[0] = count;
    Shape dest = Shape.of(dims);
    record(
        RecordedCopy.contiguous(
            source, narrow(0, start, count, total), param, destOffset, dest, dtype));
  }

  /**
   * This rank's {@code total/T} columns of a row-parallel {@code source} ({@code hidden × total})
   * into a new parameter.
   */
  private void columnSlice(String source, long total) {
    long cols = total / topology.tp();
    declare(source, Shape.of(model.hiddenSize(), cols));
    columnsInto(source, source, tpRank * cols, cols, total, 0);
  }

  /**
   * Columns {@code [start, start+count)} of {@code source} (hidden × {@code total}) into {@code
   * param} at element {@code destOffset}.
   */
  private void columnsInto(
      String source, String param, long start, long count, long total, long destOffset) {
    Shape dest = Shape.of(model.hiddenSize(), count);
    record(
        RecordedCopy.contiguous(
            source, narrow(1, start, count, total), param, destOffset, dest, dtype));
  }

  private static List<OpSpec> narrow(int dim, long start, long length, long total) {
    return start == 0 && length == total ? List.of() : List.of(OpSpec.narrow(dim, start, length));
  }

  private void record(RecordedCopy c) {
    copiesBySource.computeIfAbsent(c.srcName(), k -> new ArrayList<>()).add(c);
  }
}
