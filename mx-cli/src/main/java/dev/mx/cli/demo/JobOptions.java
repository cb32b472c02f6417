package dev.mx.cli.demo;

import picocli.CommandLine.Option;

/**
 * The options that describe a refit job, shared by {@code mx demo}, {@code mx publish} and {@code
 * mx receive} (picocli inherits annotated fields): every side of one job must agree on them.
 */
abstract class JobOptions {

  @Option(
      names = "--model",
      defaultValue = "llama-3.2-1b",
      completionCandidates = Candidates.Models.class,
      description =
          "A bundled model (${COMPLETION-CANDIDATES}) or the path to a config.json (default ${DEFAULT-VALUE}).")
  String model;

  @Option(
      names = "--trainer",
      defaultValue = "tp=4,pp=1,ep=1",
      description =
          "Trainer topology: tp=N,pp=N,ep=N,dp=N (dp: data-parallel replicas, each publishing), with etp=N (the experts' tensor-parallel size, tp unless given) and pp-first=N / pp-last=N (layers on the first / last pipeline stage, the rest split evenly), or fsdp=N (default ${DEFAULT-VALUE}).")
  String trainer;

  @Option(
      names = "--inference",
      defaultValue = "tp=2,ep=1",
      description = "Inference topology: tp=N,ep=1|N (default ${DEFAULT-VALUE}).")
  String inference;

  @Option(
      names = "--expert-map",
      paramLabel = "FILE|redundant=N",
      description =
          "Where the inference engine places its experts (EPLB), MoE models only: a JSON file"
              + " {\"<layer>\": [logical expert of each physical slot, ...], ...} naming every MoE layer, or"
              + " redundant=N: slots 0..E-1 hold experts 0..E-1 and slots E..E+N-1 replicas of experts 0..N-1"
              + " (the lowest-index experts taken as the hottest). With ep=T rank r holds slots [r*P/T, (r+1)*P/T)"
              + " of the P slots; a logical expert is read once per rank however many slots it fills"
              + " (default: slot s holds expert s).")
  String expertMap;

  @Option(
      names = "--changed",
      paramLabel = "PCT",
      defaultValue = "100",
      description =
          "Percentage (0-100) of the weights' elements each step changes (default ${DEFAULT-VALUE}). Step 0 writes"
              + " every tensor; step s >= 1 ranks the tensors by splitmix64(fnv1a64(name) ^ s*0x9E3779B97F4A7C15),"
              + " unsigned ascending (ties by name), and takes them in that order while the elements taken are below"
              + " PCT%% of all; the others keep the values of the last step that changed them. Publishers announce"
              + " each shard's last-changed step and receivers read only what changed (see --no-delta).")
  int changed;

  @Option(
      names = "--no-delta",
      description =
          "Receivers read every tensor every step, even those the publishers claim unchanged since the step they hold.")
  boolean noDelta;

  @Option(
      names = "--transport",
      defaultValue = "auto",
      completionCandidates = Candidates.Transports.class,
      description =
          "One of ${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}: the best available; publish/receive route each peer over shm or ucx; see mx transports).")
  String transport;

  @Option(
      names = "--wire",
      defaultValue = "fused",
      description = "fused or phased (default ${DEFAULT-VALUE}).")
  String wire;

  @Option(
      names = "--verify",
      defaultValue = "all",
      description =
          "all (every installed byte verified), strict, or the"
              + " opt-outs whole-shards and off, which report the bytes they install unverified (default ${DEFAULT-VALUE}).")
  String verify;

  @Option(
      names = "--trainer-dtype",
      completionCandidates = Candidates.TrainerDtypes.class,
      description =
          "Dtype the trainers publish: ${COMPLETION-CANDIDATES} (default: the model's torch_dtype)."
              + " fp8-block, fp8-block-ue8m0, mxfp8, fp8-channel: quantized sources; the trainers hold the"
              + " model's torch_dtype, quantize every linear weight of attention and the MLP on its global"
              + " tile grid (--quant-block, --fp8-rounding) and publish its float8_e4m3fn codes with its scale"
              + " tensor; receivers install both unchanged, in that format (host weights; every tensor-parallel"
              + " split must fall on tile boundaries).")
  String trainerDtype;

  @Option(
      names = "--inference-dtype",
      completionCandidates = Candidates.InferenceDtypes.class,
      description =
          "Dtype of the inference parameters: ${COMPLETION-CANDIDATES} (default: the trainer dtype)."
              + " fp8-block: receivers pull and verify the trainer dtype, then install every linear weight of"
              + " attention and the MLP (experts included) as float8_e4m3fn with a float32 <name>_scale_inv per"
              + " block of --quant-block rows and columns; embeddings, norms, lm_head, biases and the router"
              + " stay in the trainer dtype. Such installs are copies (never in place), host weights only."
              + " fp8-block-ue8m0: the same blocks, scales rounded up to powers of two; mxfp8: 1x32 blocks with"
              + " E8M0 (u8) <name>_scale; fp8-tensor / fp8-channel: a float32 <name>_scale per matrix / per row.")
  String inferenceDtype;

  @Option(
      names = "--quant-block",
      description =
          "With --inference-dtype or --trainer-dtype fp8-block or fp8-block-ue8m0: the block size, a power of two from 16 to 1024"
              + " (default 128).")
  Integer quantBlock;

  @Option(
      names = "--fp8-rounding",
      paramLabel = "exact|vllm|deepgemm",
      description =
          "With --inference-dtype or --trainer-dtype fp8-block: how each block's factor is computed from its amax, in f32:"
              + " vllm = x * (1 / (amax / 448)), vLLM's per_block_cast_to_fp8; deepgemm = x * ((1 / amax) * 448);"
              + " exact = x * (448 / amax), correctly rounded (default: mx.refit.fp8-rounding /"
              + " MX_REFIT_FP8_ROUNDING, vllm).")
  String fp8Rounding;

  @Option(
      names = "--fp8-partial-blocks",
      description =
          "With --inference-dtype fp8-block: quantize a fused member (q, k, v; gate, up) or a partition whose"
              + " size is not a multiple of the block with partial edge blocks, each member on its own grid, where"
              + " vLLM would refuse the layout (for small test models; by default such a layout exits 2 naming it).")
  boolean fp8PartialBlocks;

  @Option(
      names = "--quant-params",
      description =
          "With --inference-dtype fp8-block: quantize the parameters matching these comma-separated"
              + " vLLM-name globs (* any characters, ? one) instead of the default rule.")
  String quantParams;

  @Option(
      names = "--device",
      defaultValue = "host",
      description =
          "Where the weights live: host, or cuda / cuda:N"
              + " (publisher regions, receive buffers and staging in GPU memory, re-slice, casts and digests on the GPU;"
              + " transport auto means cuda-ipc then) (default ${DEFAULT-VALUE}).")
  String device;

  @Option(
      names = "--timeout",
      description =
          "An overall cap in seconds on each wait (for a version, a lease, a read), at most 1000000"
              + " (default none: a wait lasts while the peers it waits on heartbeat with progress).")
  Double timeoutSeconds;

  @Option(
      names = "--stall-limit",
      description =
          "Seconds a peer waited on may make no progress (stopped, killed, wedged) before the wait"
              + " fails naming it (default: mx.stall-limit / MX_STALL_LIMIT_S, 60).")
  Double stallLimitSeconds;

  /** The inference dtype label of the worker spec: the trainer dtype when none was given. */
  String inferenceLabel(String trainerLabel) {
    // Quantized sources install in their own format unless another is asked for (and refused).
    String quantized =
        Fp8Format.isFp8Block(inferenceDtype)
            ? inferenceDtype
            : inferenceDtype == null && Fp8Format.isFp8Block(trainerDtype) ? trainerDtype : null;
    if (quantized != null) {
      return Fp8Format.label(
          Fp8Format.format(quantized),
          quantBlock == null ? dev.mx.refit.cast.BlockQuantizer.DEFAULT_BLOCK : quantBlock,
          fp8Rounding(),
          fp8PartialBlocks,
          quantParams);
    }
    return inferenceDtype != null ? Workers.dtypeLabel(inferenceDtype) : trainerLabel;
  }

  /**
   * The trainers' dtype label: {@code --trainer-dtype}, else the model's {@code torch_dtype}; a
   * quantized-source format as {@code FORMAT:BLOCK:ROUNDING}.
   */
  String trainerLabel() {
    if (Fp8Format.isFp8Block(trainerDtype)) {
      return Fp8Format.label(
          Fp8Format.format(trainerDtype),
          quantBlock == null ? dev.mx.refit.cast.BlockQuantizer.DEFAULT_BLOCK : quantBlock,
          fp8Rounding(),
          false,
          null);
    }
    return trainerDtype != null ? Workers.dtypeLabel(trainerDtype) : Workers.modelDtype(model);
  }

  /** {@code --fp8-rounding}, else the receivers' setting ({@code vllm} unless set). */
  dev.mx.refit.cast.Fp8Rounding fp8Rounding() {
    return fp8Rounding != null
        ? dev.mx.refit.cast.Fp8Rounding.parse(fp8Rounding)
        : dev.mx.refit.ReceiverContext.fp8Rounding(dev.mx.api.util.Settings.system());
  }

  /** {@code --timeout} as a spec field: 0 when none was given. */
  double capSeconds() {
    return timeoutSeconds == null ? 0 : timeoutSeconds;
  }

  /** {@code --stall-limit} as a spec field: 0 when none was given (the setting decides). */
  double stallSeconds() {
    return stallLimitSeconds == null ? 0 : stallLimitSeconds;
  }

  /**
   * {@code --expert-map} resolved to its canonical placement JSON, or null without it ({@link
   * OptionChecks} has rejected a bad value before this runs).
   */
  String expertMapJson() {
    return expertMap == null
        ? null
        : ExpertMapOption.resolve(expertMap, dev.mx.layout.model.ModelConfigs.load(model)).toJson();
  }
}
