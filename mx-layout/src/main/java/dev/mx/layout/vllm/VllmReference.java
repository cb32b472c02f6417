package dev.mx.layout.vllm;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import dev.mx.layout.gen.FloatBits;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.layout.model.ModelArchitecture;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What every element of a vLLM parameter must hold, derived from the vLLM layout rules alone (by
 * parsing the parameter name and mapping local coordinates to global ones) — deliberately not from
 * {@link VllmLayout}'s recorded copies, so that tests can check the copies, the planner and the
 * receiver against it.
 */
public final class VllmReference {
  private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

  private final ModelArchitecture model;
  private final int tp;
  private final boolean expertParallel;
  private final int ep;
  private final int rank;

  /** The attention rank, {@code rank % tp}; {@code rank} indexes the experts. */
  private final int tpRank;

  private final ExpertPlacement experts;
  private final Map<String, LongFunction<GlobalElement>> rules = new ConcurrentHashMap<>();

  public VllmReference(ModelArchitecture model, InferenceTopology topology, int rank) {
    this(model, topology, rank, null);
  }

  /**
   * The reference for a rank whose expert slots follow {@code placement} (null: slot {@code s}
   * holds expert {@code s}): slot {@code s} of a layer holds its logical expert's values.
   */
  public VllmReference(
      ModelArchitecture model, InferenceTopology topology, int rank, ExpertPlacement placement) {
    this.model = model;
    this.tp = topology.tp();
    this.expertParallel = topology.expertParallel();
    this.ep = topology.ep();
    this.rank = rank;
    this.tpRank = topology.tpRank(rank);
    this.experts =
        placement != null || !model.isMoe() ? placement : ExpertPlacement.identity(model);
  }

  /** Padded vocabulary rows per rank: {@code ceil(vocab/64)·64 / T}. */
  private long vocabRowsPerRank() {
    long padded = (model.vocabSize() + 63L) / 64 * 64;
    return padded / tp;
  }

  private long kvHeadsPerRank() {
    return Math.max(1, model.numKeyValueHeads() / tp);
  }

  /**
   * The first KV head of this rank: {@code floor(r·KV/T)} (equals {@code r·KV/T} or {@code
   * r/(T/KV)}).
   */
  private long firstKvHead() {
    return (long) tpRank * model.numKeyValueHeads() / tp;
  }

  private long expertsPerRank(int layer) {
    int slots = experts.slotCount(layer);
    return expertParallel ? slots / ep : slots;
  }

  private long expertIntermediate() {
    return expertParallel ? model.moeIntermediateSize() : model.moeIntermediateSize() / tp;
  }

  /** The local shape of {@code param} by the vLLM rules. */
  public Shape shape(String param) {
    long h = model.hiddenSize();
    long hd = model.headDim();
    if (param.equals("model.embed_tokens.weight") || param.equals("lm_head.weight")) {
      return Shape.of(vocabRowsPerRank(), h);
    }
    if (param.equals("model.norm.weight")) {
      return Shape.of(h);
    }
    Matcher m = layer(param);
    String rest = m.group(2);
    int layer = Integer.parseInt(m.group(1));
    long qkvRows = (model.numAttentionHeads() / tp + 2 * kvHeadsPerRank()) * hd;
    return switch (rest) {
      case "input_layernorm.weight", "post_attention_layernorm.weight" -> Shape.of(h);
      case "self_attn.q_norm.weight", "self_attn.k_norm.weight" -> Shape.of(hd);
      case "self_attn.qkv_proj.weight" -> Shape.of(qkvRows, h);
      case "self_attn.qkv_proj.bias" -> Shape.of(qkvRows);
      case "self_attn.o_proj.weight" ->
          Shape.of(
              h,
              (long) model.numAttentionHeads()
                  * (model.mla().isPresent() ? mla().vHeadDim() : hd)
                  / tp);
      case "mlp.gate_up_proj.weight" -> Shape.of(2L * model.intermediateSize() / tp, h);
      case "mlp.down_proj.weight" -> Shape.of(h, model.intermediateSize() / tp);
      case "mlp.gate.weight" -> Shape.of(model.numExperts(), h);
      case "mlp.gate.e_score_correction_bias" -> Shape.of(model.numExperts());
      case "mlp.shared_experts.gate_up_proj.weight" ->
          Shape.of(2 * model.sharedIntermediateSize() / tp, h);
      case "mlp.shared_experts.down_proj.weight" ->
          Shape.of(h, model.sharedIntermediateSize() / tp);
      case "self_attn.fused_qkv_a_proj.weight" ->
          Shape.of((long) mla().qLoraRank() + mla().kvLoraRank() + mla().qkRopeHeadDim(), h);
      case "self_attn.q_a_layernorm.weight" -> Shape.of(mla().qLoraRank());
      case "self_attn.kv_a_layernorm.weight" -> Shape.of(mla().kvLoraRank());
      case "self_attn.q_b_proj.weight" ->
          Shape.of((long) model.numAttentionHeads() / tp * mla().qkHeadDim(), mla().qLoraRank());
      case "self_attn.kv_b_proj.weight" ->
          Shape.of((long) model.numAttentionHeads() / tp * mla().kvBHeadDim(), mla().kvLoraRank());
      case "mlp.experts.w13_weight" -> Shape.of(expertsPerRank(layer), 2 * expertIntermediate(), h);
      case "mlp.experts.w2_weight" -> Shape.of(expertsPerRank(layer), h, expertIntermediate());
      default -> throw unknown(param);
    };
  }

  /**
   * The global element that element {@code flatIndex} of {@code param} holds, or null for
   * vocabulary padding (which must stay zero).
   */
  public GlobalElement source(String param, long flatIndex) {
    return rules.computeIfAbsent(param, this::compile).apply(flatIndex);
  }

  /** The local-to-global mapping of one parameter, with every name it can return built once. */
  private LongFunction<GlobalElement> compile(String param) {
    Shape local = shape(param);
    long h = model.hiddenSize();
    long hd = model.headDim();
    if (param.equals("model.embed_tokens.weight") || param.equals("lm_head.weight")) {
      long firstRow = tpRank * vocabRowsPerRank();
      return i -> {
        long row = firstRow + i / h;
        return row >= model.vocabSize() ? null : new GlobalElement(param, row * h + i % h);
      };
    }
    if (param.equals("model.norm.weight")) {
      return i -> new GlobalElement(param, i);
    }
    Matcher m = layer(param);
    String p = "model.layers." + m.group(1) + ".";
    String rest = m.group(2);
    switch (rest) {
      case "input_layernorm.weight",
          "post_attention_layernorm.weight",
          "self_attn.q_norm.weight",
          "self_attn.k_norm.weight",
          "self_attn.q_a_layernorm.weight",
          "self_attn.kv_a_layernorm.weight",
          "mlp.gate.e_score_correction_bias",
          "mlp.gate.weight" -> {
        return i -> new GlobalElement(param, i);
      }
      case "self_attn.fused_qkv_a_proj.weight" -> {
        String q = p + "self_attn.q_a_proj.weight";
        String kv = p + "self_attn.kv_a_proj_with_mqa.weight";
        long qElems = (long) mla().qLoraRank() * h;
        return i -> i < qElems ? new GlobalElement(q, i) : new GlobalElement(kv, i - qElems);
      }
      case "self_attn.q_b_proj.weight", "self_attn.kv_b_proj.weight" -> {
        long base = tpRank * local.numel();
        return i -> new GlobalElement(param, base + i);
      }
      case "mlp.shared_experts.gate_up_proj.weight" -> {
        return gateUp(p + "mlp.shared_experts.", local.dim(0) / 2);
      }
      case "mlp.shared_experts.down_proj.weight" -> {
        long cols = local.dim(1);
        long total = cols * tp;
        return i -> new GlobalElement(param, i / cols * total + tpRank * cols + i % cols);
      }
      case "self_attn.qkv_proj.weight", "self_attn.qkv_proj.bias" -> {
        long width = rest.endsWith("weight") ? h : 1;
        String suffix = rest.endsWith("weight") ? "weight" : "bias";
        String q = p + "self_attn.q_proj." + suffix;
        String k = p + "self_attn.k_proj." + suffix;
        String v = p + "self_attn.v_proj." + suffix;
        long qRows = model.numAttentionHeads() / tp * hd;
        long kvRows = kvHeadsPerRank() * hd;
        long firstKv = firstKvHead();
        return i -> {
          long row = i / width;
          long col = i % width;
          if (row < qRows) {
            return new GlobalElement(q, (tpRank * qRows + row) * width + col);
          }
          long r = row - qRows;
          long globalRow = (firstKv + r % kvRows / hd) * hd + r % hd;
          return new GlobalElement(r < kvRows ? k : v, globalRow * width + col);
        };
      }
      case "self_attn.o_proj.weight", "mlp.down_proj.weight" -> {
        long cols = local.dim(1);
        long total = cols * tp;
        return i -> new GlobalElement(param, i / cols * total + tpRank * cols + i % cols);
      }
      case "mlp.gate_up_proj.weight" -> {
        return gateUp(p + "mlp.", local.dim(0) / 2);
      }
      case "mlp.experts.w13_weight" -> {
        long il = expertIntermediate();
        long perExpert = 2 * il * h;
        String[] gate = expertNames(p, "gate_proj");
        String[] up = expertNames(p, "up_proj");
        return i -> {
          int j = (int) (i / perExpert);
          long within = i % perExpert;
          long row = within / h;
          return new GlobalElement(
              row < il ? gate[j] : up[j], (sliceBase() + row % il) * h + within % h);
        };
      }
      case "mlp.experts.w2_weight" -> {
        long il = expertIntermediate();
        long perExpert = h * il;
        String[] down = expertNames(p, "down_proj");
        return i -> {
          int j = (int) (i / perExpert);
          long within = i % perExpert;
          return new GlobalElement(
              down[j], within / il * model.moeIntermediateSize() + sliceBase() + within % il);
        };
      }
      default -> throw unknown(param);
    }
  }

  /** A fused gate_up parameter of {@code rows} gate rows then {@code rows} up rows. */
  private LongFunction<GlobalElement> gateUp(String prefix, long rows) {
    long h = model.hiddenSize();
    String gate = prefix + "gate_proj.weight";
    String up = prefix + "up_proj.weight";
    return i -> {
      long row = i / h;
      return new GlobalElement(row < rows ? gate : up, (tpRank * rows + row % rows) * h + i % h);
    };
  }

  private ModelArchitecture.Mla mla() {
    return model
        .mla()
        .orElseThrow(() -> new LayoutException(model.modelName() + " has no latent attention"));
  }

  /**
   * The names of projection {@code proj} of the logical experts in this rank's slots, by local
   * slot.
   */
  private String[] expertNames(String layerPrefix, String proj) {
    int layer =
        Integer.parseInt(layerPrefix.substring("model.layers.".length(), layerPrefix.length() - 1));
    String[] names = new String[Math.toIntExact(expertsPerRank(layer))];
    long base = expertParallel ? rank * expertsPerRank(layer) : 0;
    for (int j = 0; j < names.length; j++) {
      int logical = experts.logical(layer, Math.toIntExact(base + j));
      names[j] = layerPrefix + "mlp.experts." + logical + "." + proj + ".weight";
    }
    return names;
  }

  /**
   * A length such that every aligned run of it in {@code param} maps to consecutive elements of one
   * global tensor (or is all padding): a row for matrices, a head for the fused q/k/v bias, the
   * whole vector otherwise.
   */
  long runLength(String param) {
    Shape s = shape(param);
    if (s.rank() > 1) {
      return s.dim(s.rank() - 1);
    }
    return param.endsWith(".self_attn.qkv_proj.bias") ? model.headDim() : s.numel();
  }

  private long sliceBase() {
    return expertParallel ? 0 : tpRank * expertIntermediate();
  }

  /**
   * The bits element {@code flatIndex} of {@code param} must hold after a refit of {@code step}:
   * the generator's value as the trainer stores it in {@code trainerDtype}, cast (round to nearest
   * even) to {@code inferenceDtype}; zero for padding.
   */
  public long expectedBits(
      String param, long flatIndex, long step, DType trainerDtype, DType inferenceDtype) {
    GlobalElement g = source(param, flatIndex);
    if (g == null) {
      return 0;
    }
    return castBits(
        WeightGenerator.value(g.tensor(), step, g.flatIndex()), trainerDtype, inferenceDtype);
  }

  /** {@code v} stored in {@code from}, then cast to {@code to}, as {@code to}'s bits. */
  public static long castBits(float v, DType from, DType to) {
    double stored = FloatBits.valueOf(FloatBits.storedBits(v, from), from);
    return to == DType.F64
        ? Double.doubleToRawLongBits(stored)
        : FloatBits.storedBits((float) stored, to);
  }

  /**
   * Compares every element of a received parameter with {@link #expectedBits}; returns up to {@code
   * limit} descriptions of mismatching elements (empty when all match). Works a {@link #runLength
   * run} at a time: under every vLLM rule a run is consecutive elements of one global tensor, or
   * padding, so the cost per element is one generator call.
   */
  public List<String> mismatches(
      String param,
      MemorySegment data,
      long step,
      DType trainerDtype,
      DType inferenceDtype,
      int limit) {
    Shape s = shape(param);
    long n = s.numel();
    int elsize = inferenceDtype.elementSize();
    List<String> out = new ArrayList<>();
    if (data.byteSize() != n * elsize) {
      out.add(
          param
              + ": holds "
              + data.byteSize()
              + " bytes, expected "
              + n * elsize
              + " for "
              + s
              + " "
              + inferenceDtype);
      return out;
    }
    long width = runLength(param);
    for (long rowStart = 0; rowStart < n && out.size() < limit; rowStart += width) {
      GlobalElement g = source(param, rowStart);
      long key = g == null ? 0 : WeightGenerator.key(g.tensor(), step);
      for (long j = 0; j < width && out.size() < limit; j++) {
        long have = FloatBits.bitsAt(data, rowStart + j, inferenceDtype);
        long want =
            g == null
                ? 0
                : castBits(
                    WeightGenerator.valueAt(key, g.flatIndex() + j), trainerDtype, inferenceDtype);
        if (have != want) {
          out.add(
              param
                  + "["
                  + (rowStart + j)
                  + "] = 0x"
                  + Long.toHexString(have)
                  + ", expected 0x"
                  + Long.toHexString(want)
                  + (g == null
                      ? " (vocabulary padding)"
                      : " from " + g.tensor() + "[" + (g.flatIndex() + j) + "]"));
        }
      }
    }
    return out;
  }

  private Matcher layer(String param) {
    Matcher m = LAYER.matcher(param);
    if (!m.matches() || Integer.parseInt(m.group(1)) >= model.numHiddenLayers()) {
      throw unknown(param);
    }
    return m;
  }

  private LayoutException unknown(String param) {
    return new LayoutException("no vLLM parameter '" + param + "' in " + model.modelName());
  }
}
