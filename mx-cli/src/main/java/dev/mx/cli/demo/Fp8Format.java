package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ScaleTiles;
import dev.mx.layout.vllm.Fp8BlockLayout;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantFormat;
import java.util.Arrays;
import java.util.List;

/**
 * {@code --inference-dtype fp8-block} (or another {@link QuantFormat}: {@code fp8-block-ue8m0},
 * {@code mxfp8}, {@code fp8-tensor}, {@code fp8-channel}, written in place of {@code fp8-block}
 * below): the engine holds its linear weights FP8-quantized. The worker spec carries it in its
 * inference dtype label, {@code fp8-block:BLOCK:ROUNDING}, then {@code :partial-blocks} with {@code
 * --fp8-partial-blocks} and {@code :params=GLOB,GLOB} with {@code --quant-params}, so that every
 * process of a job reads the same rule; receivers pull the trainer dtype and quantize at install.
 */
final class Fp8Format {
  static final String NAME = "fp8-block";

  /** Block sizes the engine kernels take: powers of two from 16 to 1024 (128 by default). */
  static final int MIN_BLOCK = 16;

  static final int MAX_BLOCK = 1024;

  private static final String PARAMS = "params=";

  private static final String PARTIAL = "partial-blocks";

  private Fp8Format() {}

  /**
   * Whether an option value or spec label asks for a quantizing install: {@code fp8-block}, {@code
   * fp8-block-ue8m0}, {@code mxfp8}, {@code fp8-tensor} or {@code fp8-channel} ({@link
   * QuantFormat}).
   */
  static boolean isFp8Block(String label) {
    return label != null && QuantFormat.isFormat(label.split(":", 2)[0]);
  }

  /** The format of an option value or spec label. */
  static QuantFormat format(String label) {
    return QuantFormat.parse(label.split(":", 2)[0]);
  }

  /** Whether {@code block} is a size the option accepts. */
  static boolean supportedBlock(int block) {
    return block >= MIN_BLOCK && block <= MAX_BLOCK && Integer.bitCount(block) == 1;
  }

  /** The spec label for a block size, a rounding mode and an optional comma-separated rule. */
  static String label(
      QuantFormat format, int block, Fp8Rounding rounding, boolean partialBlocks, String params) {
    return format.label()
        + ":"
        + block
        + ":"
        + rounding.label()
        + (partialBlocks ? ":" + PARTIAL : "")
        + (params == null ? "" : ":" + PARAMS + params);
  }

  /** Whether the label allows partial blocks per member ({@code --fp8-partial-blocks}). */
  static boolean partialBlocks(String label) {
    return List.of(label.split(":")).contains(PARTIAL);
  }

  static int block(String label) {
    return Integer.parseInt(label.split(":")[1]);
  }

  static Fp8Rounding rounding(String label) {
    return Fp8Rounding.parse(label.split(":")[2]);
  }

  /** The globs of {@code --quant-params}, or empty for the default rule. */
  static List<String> params(String label) {
    for (String part : label.split(":")) {
      if (part.startsWith(PARAMS)) {
        return globs(part.substring(PARAMS.length()));
      }
    }
    return List.of();
  }

  static List<String> globs(String params) {
    return Arrays.stream(params.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
  }

  /**
   * The dtype receivers pull for an inference label: the trainers' when quantizing at install (for
   * the parameters left unquantized, when the trainers publish quantized sources).
   */
  static DType receiveDtype(WorkerSpec spec) {
    return isFp8Block(spec.inferenceDtype())
        ? trainerMaster(spec)
        : DType.parse(spec.inferenceDtype());
  }

  /**
   * Whether the trainers publish quantized sources ({@code --trainer-dtype fp8-block} or another
   * format): every linear weight in e4m3fn with its scales, which receivers install unchanged.
   */
  static boolean quantizedSource(WorkerSpec spec) {
    return isFp8Block(spec.trainerDtype());
  }

  /**
   * The dtype the trainers hold and generate their weights in: the trainer dtype, or the model's
   * {@code torch_dtype} when they publish quantized sources (quantized from it).
   */
  static DType trainerMaster(WorkerSpec spec) {
    return quantizedSource(spec)
        ? DType.parse(Workers.modelDtype(spec.model()))
        : DType.parse(spec.trainerDtype());
  }

  /**
   * The scale tiles of a quantized-source label: square blocks, MXFP8's 1 x 32 or one scale per
   * row; per-tensor scales are refused (a fused parameter would need one scale for several members,
   * which only re-quantizing gives).
   */
  static ScaleTiles tiles(String label) {
    QuantFormat f = format(label);
    long rows =
        switch (f) {
          case BLOCK, BLOCK_UE8M0 -> block(label);
          case MXFP8, CHANNEL -> 1;
          case TENSOR -> throw tensorSource();
        };
    long cols =
        switch (f) {
          case BLOCK, BLOCK_UE8M0 -> block(label);
          case MXFP8 -> QuantFormat.MX_BLOCK;
          case CHANNEL -> ScaleTiles.WHOLE;
          case TENSOR -> throw tensorSource();
        };
    return new ScaleTiles(f.scaleSuffix(), f.scaleDtype(), rows, cols);
  }

  static IllegalArgumentException tensorSource() {
    return new IllegalArgumentException(
        "fp8-tensor sources are not supported: vLLM holds one scale per fused parameter, which only"
            + " re-quantizing the members' per-tensor scales gives; publish fp8-block, fp8-block-ue8m0,"
            + " mxfp8 or fp8-channel");
  }

  /** Whether a trainer publishes global tensor {@code name} quantized: the linear weights. */
  static boolean quantizedTensor(ModelArchitecture model, String name) {
    return model.find(name).map(Fp8Format::quantizedTensor).orElse(false);
  }

  /** Whether a trainer publishes {@code t} quantized: a linear weight matrix. */
  static boolean quantizedTensor(GlobalTensor t) {
    return t.shape().rank() >= 2 && Fp8BlockLayout.LINEAR_WEIGHTS.contains(t.role());
  }

  /** The quantized parameters of one rank under an fp8 label. */
  static Fp8BlockLayout layout(String label, VllmLayout geometry) {
    List<String> globs = params(label);
    QuantFormat f = format(label);
    int block = block(label);
    Fp8BlockLayout.Scales scales =
        new Fp8BlockLayout.Scales(
            f.scaleSuffix(),
            f.scaleDtype(),
            f.hasBlock(),
            (w, members) -> f.engineScaleShape(w, block, members));
    return globs.isEmpty()
        ? Fp8BlockLayout.defaults(geometry, block, partialBlocks(label), scales)
        : Fp8BlockLayout.matching(geometry, block, globs, partialBlocks(label), scales);
  }
}
