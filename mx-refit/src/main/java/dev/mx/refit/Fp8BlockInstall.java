package dev.mx.refit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.cast.BlockQuantizer;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantizationError;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Installs verified receive buffers into engine weights that hold some parameters FP8
 * block-quantized: those are quantized ({@link BlockQuantizer}) from the pulled bytes straight into
 * the live e4m3fn weight and its {@code _scale_inv}, the rest are copied as {@link LiveWeights}
 * does. Like a plain install it runs only after the receiver verified every byte against the
 * publishers' digests, and it checks every buffer before it writes any, so a step's weights and
 * scales go live together or not at all. Host live weights only. Each block's factor is computed by
 * the {@link Fp8Rounding} given (the receivers' {@code mx.refit.fp8-rounding}, {@code vllm} unless
 * set).
 */
@Internal
public final class Fp8BlockInstall implements Installer {
  private final LiveWeights live;
  private final Map<String, ParamSpec> received;
  private final Map<String, String> scales;
  private final int block;
  private final Fp8Rounding rounding;
  private volatile QuantizationError lastError = QuantizationError.NONE;

  /**
   * @param live the engine's weights: every quantized weight in e4m3fn and its scales in f32
   * @param received each parameter as the receiver pulls it (shape and source dtype)
   * @param scales quantized weight name → its scales' name
   * @param rounding how each block's factor is computed from its amax
   */
  public Fp8BlockInstall(
      LiveWeights live,
      Map<String, ParamSpec> received,
      Map<String, String> scales,
      int block,
      Fp8Rounding rounding) {
    if (live.memory().isDevice()) {
      throw new IllegalArgumentException(
          "fp8 block quantization installs into host weights; these live in " + live.memory());
    }
    this.live = live;
    this.received = Map.copyOf(received);
    this.scales = Map.copyOf(scales);
    this.block = block;
    this.rounding = java.util.Objects.requireNonNull(rounding, "rounding");
    for (Map.Entry<String, String> e : this.scales.entrySet()) {
      ParamSpec from = this.received.get(e.getKey());
      if (from == null || !BlockQuantizer.supportsSource(from.dtype())) {
        throw new IllegalArgumentException(
            "cannot block-quantize parameter '"
                + e.getKey()
                + "': "
                + (from == null ? "it is not received" : "it is received as " + from.dtype()));
      }
      live.parameter(e.getKey());
      live.parameter(e.getValue());
    }
  }

  @Override
  public synchronized void install(long step, Map<String, MemorySegment> receiveBuffers) {
    Map<String, MemorySegment> copied = new LinkedHashMap<>();
    for (Map.Entry<String, MemorySegment> e : receiveBuffers.entrySet()) {
      String name = e.getKey();
      if (!scales.containsKey(name)) {
        copied.put(name, e.getValue());
        continue;
      }
      ParamSpec spec = received.get(name);
      if (e.getValue().byteSize() != spec.byteSize()) {
        throw new IllegalArgumentException(
            "cannot install parameter '"
                + name
                + "' of "
                + e.getValue().byteSize()
                + " bytes: it is received as "
                + spec.byteSize()
                + " bytes of "
                + spec.dtype());
      }
    }
    // Copies are checked too before anything is written; then quantize, then copy.
    live.check(copied);
    QuantizationError error = QuantizationError.NONE;
    for (Map.Entry<String, MemorySegment> e : receiveBuffers.entrySet()) {
      String scale = scales.get(e.getKey());
      if (scale != null) {
        ParamSpec spec = received.get(e.getKey());
        error =
            error.max(
                BlockQuantizer.quantize(
                    e.getValue(),
                    spec.dtype(),
                    live.parameter(e.getKey()),
                    live.parameter(scale),
                    spec.shape(),
                    block,
                    true,
                    // The install is on the critical path: every core the JVM has.
                    Runtime.getRuntime().availableProcessors(),
                    rounding));
      }
    }
    live.install(step, copied);
    lastError = error;
  }

  /** The quantization error of the last install, over every quantized parameter. */
  public QuantizationError lastError() {
    return lastError;
  }

  public int block() {
    return block;
  }

  public Fp8Rounding rounding() {
    return rounding;
  }
}
