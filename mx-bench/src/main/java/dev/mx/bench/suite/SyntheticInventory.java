package dev.mx.bench.suite;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A synthetic planning inventory shaped like DeepSeek-V3 (61 layers, the last 58 MoE with 256
 * routed experts of 2048×7168 / 7168×2048, MLA attention, a 129280-row vocabulary): what one
 * receiver rank of a TP=8 inference engine captures, against what an EP=8 trainer publishes.
 * Experts are whole on rank {@code expert / 32}; other matrices are split along dim 0 over the
 * eight trainer ranks; vectors live on rank 0. Addresses are made up: planning only does arithmetic
 * on them.
 */
final class SyntheticInventory {
  static final int HIDDEN = 7168;
  static final int MOE_INTER = 2048;
  static final int DENSE_INTER = 18432;
  static final int VOCAB = 129280;
  static final int EXPERTS = 256;
  static final int LAYERS = 61;
  static final int DENSE_LAYERS = 3;
  static final int Q_LORA = 1536;
  static final int KV_LORA = 512;
  static final int ROPE = 64;
  static final int HEADS = 128;
  static final int QK_HEAD = 192;
  static final int V_HEAD = 128;

  final Map<String, SourceInfo> sources = new LinkedHashMap<>();
  final List<RecordedCopy> copies = new ArrayList<>();

  /** Receive-buffer (and staging) base addresses by parameter / source name. */
  final Map<String, Long> bases = new HashMap<>();

  private final int trainers;
  private final int tp;
  private final int rank;
  private final long[] nextAddr;
  private final Map<String, Long> paramExtent = new LinkedHashMap<>();

  private SyntheticInventory(int trainers, int tp, int rank) {
    this.trainers = trainers;
    this.tp = tp;
    this.rank = rank;
    this.nextAddr = new long[trainers];
    for (int t = 0; t < trainers; t++) {
      nextAddr[t] = (0x7f00L + t) << 32;
    }
  }

  /**
   * The inventory for receiver {@code rank} of a TP={@code tp} engine fed by {@code trainers} EP
   * ranks.
   *
   * @param moeLayers how many MoE layers to include (58 for the full model; fewer for a smaller
   *     run)
   */
  static SyntheticInventory deepSeekV3(int trainers, int tp, int rank, int moeLayers) {
    SyntheticInventory inv = new SyntheticInventory(trainers, tp, rank);
    inv.build(Math.min(LAYERS, DENSE_LAYERS + moeLayers));
    return inv;
  }

  CaptureResult capture() {
    return CaptureResult.of(copies);
  }

  private void build(int layers) {
    DType bf16 = DType.BF16;
    column("model.embed_tokens.weight", VOCAB, HIDDEN, "model.embed_tokens.weight", 0);
    for (int l = 0; l < layers; l++) {
      String p = "model.layers." + l + ".";
      String attn = p + "self_attn.";
      replicated(
          p + "input_layernorm.weight", new long[] {HIDDEN}, p + "input_layernorm.weight", 0, bf16);
      replicated(
          p + "post_attention_layernorm.weight",
          new long[] {HIDDEN},
          p + "post_attention_layernorm.weight",
          0,
          bf16);
      String fusedA = attn + "fused_qkv_a_proj.weight";
      replicated(attn + "q_a_proj.weight", new long[] {Q_LORA, HIDDEN}, fusedA, 0, bf16);
      replicated(
          attn + "kv_a_proj_with_mqa.weight",
          new long[] {KV_LORA + ROPE, HIDDEN},
          fusedA,
          (long) Q_LORA * HIDDEN,
          bf16);
      replicated(
          attn + "q_a_layernorm.weight",
          new long[] {Q_LORA},
          attn + "q_a_layernorm.weight",
          0,
          bf16);
      replicated(
          attn + "kv_a_layernorm.weight",
          new long[] {KV_LORA},
          attn + "kv_a_layernorm.weight",
          0,
          bf16);
      column(attn + "q_b_proj.weight", HEADS * QK_HEAD, Q_LORA, attn + "q_b_proj.weight", 0);
      column(
          attn + "kv_b_proj.weight",
          HEADS * (QK_HEAD - ROPE + V_HEAD),
          KV_LORA,
          attn + "kv_b_proj.weight",
          0);
      row(attn + "o_proj.weight", HIDDEN, HEADS * V_HEAD, attn + "o_proj.weight", 0);
      String mlp = p + "mlp.";
      if (l < DENSE_LAYERS) {
        gatedMlp(mlp, DENSE_INTER, mlp + "gate_up_proj.weight", mlp + "down_proj.weight");
        continue;
      }
      replicated(mlp + "gate.weight", new long[] {EXPERTS, HIDDEN}, mlp + "gate.weight", 0, bf16);
      // published in bf16, loaded as f32: the one convert of the inventory per layer
      source(mlp + "gate.e_score_correction_bias", new long[] {EXPERTS}, bf16, false, 0);
      copies.add(
          contiguous(
              mlp + "gate.e_score_correction_bias",
              List.of(),
              mlp + "gate.e_score_correction_bias",
              0,
              new long[] {EXPERTS},
              DType.F32));
      gatedMlp(
          mlp + "shared_experts.",
          MOE_INTER,
          mlp + "shared_experts.gate_up_proj.weight",
          mlp + "shared_experts.down_proj.weight");
      int local = MOE_INTER / tp;
      long w13Expert = 2L * local * HIDDEN;
      long w2Expert = (long) HIDDEN * local;
      for (int e = 0; e < EXPERTS; e++) {
        String ex = mlp + "experts." + e + ".";
        int owner = e / (EXPERTS / trainers);
        source(ex + "gate_proj.weight", new long[] {MOE_INTER, HIDDEN}, bf16, false, owner);
        source(ex + "up_proj.weight", new long[] {MOE_INTER, HIDDEN}, bf16, false, owner);
        source(ex + "down_proj.weight", new long[] {HIDDEN, MOE_INTER}, bf16, false, owner);
        OpSpec rows = OpSpec.narrow(0, (long) rank * local, local);
        copies.add(
            contiguous(
                ex + "gate_proj.weight",
                List.of(rows),
                mlp + "experts.w13_weight",
                e * w13Expert,
                new long[] {local, HIDDEN},
                bf16));
        copies.add(
            contiguous(
                ex + "up_proj.weight",
                List.of(rows),
                mlp + "experts.w13_weight",
                e * w13Expert + (long) local * HIDDEN,
                new long[] {local, HIDDEN},
                bf16));
        copies.add(
            contiguous(
                ex + "down_proj.weight",
                List.of(OpSpec.narrow(1, (long) rank * local, local)),
                mlp + "experts.w2_weight",
                e * w2Expert,
                new long[] {HIDDEN, local},
                bf16));
      }
    }
    replicated("model.norm.weight", new long[] {HIDDEN}, "model.norm.weight", 0, bf16);
    column("lm_head.weight", VOCAB, HIDDEN, "lm_head.weight", 0);
    assignBases();
  }

  private void gatedMlp(String prefix, int inter, String gateUp, String down) {
    int local = inter / tp;
    column(prefix + "gate_proj.weight", inter, HIDDEN, gateUp, 0);
    column(prefix + "up_proj.weight", inter, HIDDEN, gateUp, (long) local * HIDDEN);
    row(prefix + "down_proj.weight", HIDDEN, inter, down, 0);
  }

  private void replicated(String name, long[] shape, String param, long destOffset, DType dtype) {
    source(name, shape, dtype, shape.length > 1, 0);
    copies.add(contiguous(name, List.of(), param, destOffset, shape, dtype));
  }

  /** Column parallel: this rank's rows. */
  private void column(String name, int rows, int cols, String param, long destOffset) {
    source(name, new long[] {rows, cols}, DType.BF16, true, 0);
    int local = rows / tp;
    copies.add(
        contiguous(
            name,
            List.of(OpSpec.narrow(0, (long) rank * local, local)),
            param,
            destOffset,
            new long[] {local, cols},
            DType.BF16));
  }

  /** Row parallel: this rank's columns. */
  private void row(String name, int rows, int cols, String param, long destOffset) {
    source(name, new long[] {rows, cols}, DType.BF16, true, 0);
    int local = cols / tp;
    copies.add(
        contiguous(
            name,
            List.of(OpSpec.narrow(1, (long) rank * local, local)),
            param,
            destOffset,
            new long[] {rows, local},
            DType.BF16));
  }

  /** Publishes a source: split along dim 0 over every trainer rank, or whole on {@code owner}. */
  private void source(String name, long[] shape, DType dtype, boolean splitDim0, int owner) {
    List<Shard> shards = new ArrayList<>();
    int elsize = dtype.elementSize();
    if (splitDim0) {
      long start = 0;
      for (int t = 0; t < trainers; t++) {
        long rows = shape[0] / trainers + (t < shape[0] % trainers ? 1 : 0);
        long[] local = shape.clone();
        local[0] = rows;
        shards.add(shard(t, new long[] {start, 0}, local, elsize));
        start += rows;
      }
    } else {
      shards.add(shard(owner, new long[shape.length], shape, elsize));
    }
    sources.put(name, new SourceInfo(Shape.of(shape), dtype, elsize, shards));
  }

  private Shard shard(int trainer, long[] offset, long[] shape, int elsize) {
    long addr = nextAddr[trainer];
    nextAddr[trainer] += Shape.of(shape).byteSize(elsize);
    return new Shard(offset, Shape.of(shape), "trainer-" + trainer, addr, elsize, null);
  }

  private RecordedCopy contiguous(
      String src,
      List<OpSpec> chain,
      String param,
      long destOffset,
      long[] destShape,
      DType dtype) {
    RecordedCopy c =
        RecordedCopy.contiguous(src, chain, param, destOffset, Shape.of(destShape), dtype);
    paramExtent.merge(
        param, (destOffset + Shape.of(destShape).numel()) * dtype.elementSize(), Math::max);
    return c;
  }

  /** Receive buffers, then a full-pull staging buffer for every source, laid out back to back. */
  private void assignBases() {
    long next = 0x5500_0000_0000L;
    for (var e : paramExtent.entrySet()) {
      bases.put(e.getKey(), next);
      next += (e.getValue() + 255) & ~255L;
    }
    for (var e : sources.entrySet()) {
      bases.putIfAbsent(e.getKey(), next);
      next += (e.getValue().globalShape().byteSize(e.getValue().elsize()) + 255) & ~255L;
    }
  }
}
