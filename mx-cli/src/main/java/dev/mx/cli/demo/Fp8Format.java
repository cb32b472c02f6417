package dev.mx.cli.demo;

import dev.mx.api.DType;
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

  /** The dtype receivers pull for an inference label: the trainers' when quantizing at install. */
  static DType receiveDtype(WorkerSpec spec) {
    return isFp8Block(spec.inferenceDtype())
        ? DType.parse(spec.trainerDtype())
        : DType.parse(spec.inferenceDtype());
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
