package dev.mx.cli.demo;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.Installer;
import dev.mx.api.util.Settings;
import dev.mx.layout.vllm.Fp8BlockLayout;
import dev.mx.layout.vllm.QuantizedSourceGeometry;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.refit.Fp8BlockInstall;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.cast.QuantizationError;
import dev.mx.refit.stage.StagingWaves;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One inference rank's weights as the engine holds them: the layout its receivers pull ({@code
 * geometry}), the live weights, and what installs a verified step into them; with {@code fp8-block}
 * the live weights are the quantized engine layout and installs quantize.
 *
 * @param fp8 the quantizing installer, or null when the weights are installed as pulled
 * @param source what the receivers plan from: the layout, or with quantized sources the layout that
 *     pulls their codes and scales into the engine's quantized parameters unchanged
 */
record EngineWeights(
    VllmLayout geometry, LiveWeights live, Fp8BlockInstall fp8, GeometrySource source) {

  EngineWeights(VllmLayout geometry, LiveWeights live, Fp8BlockInstall fp8) {
    this(geometry, live, fp8, geometry);
  }

  /**
   * Lays out rank {@code spec.rank()}'s weights, in the memory of {@code device} (null: host); in
   * place, with the receivers' staging budget set aside beside them, so the first refit neither
   * allocates nor faults it in.
   */
  static EngineWeights create(WorkerSpec spec, MemoryOps device) {
    return create(spec, device, null);
  }

  /**
   * As {@link #create(WorkerSpec, MemoryOps)}; host weights that {@code servedBy} serves to other
   * engines ({@code --serve-installed}) are allocated by it, so a same-host transport maps them
   * into their readers (null: plain host memory).
   */
  static EngineWeights create(
      WorkerSpec spec, MemoryOps device, dev.mx.api.transport.Transport servedBy) {
    VllmLayout geometry = Workers.inferenceLayout(spec);
    long staging =
        !spec.inPlace() ? 0 : spec.stagingBytes() > 0 ? spec.stagingBytes() : defaultStaging();
    if (!Fp8Format.isFp8Block(spec.inferenceDtype())) {
      return new EngineWeights(geometry, live(geometry.params(), device, servedBy, staging), null);
    }
    Fp8BlockLayout q = Fp8Format.layout(spec.inferenceDtype(), geometry);
    if (Fp8Format.quantizedSource(spec)) {
      // The publishers' codes and scales land in the engine's parameters as they are.
      QuantizedSourceGeometry source =
          new QuantizedSourceGeometry(geometry, q, Fp8Format.tiles(spec.trainerDtype()));
      return new EngineWeights(
          geometry, live(source.params(), device, servedBy, staging), null, source);
    }
    LiveWeights live = new LiveWeights(q.engine());
    try {
      return new EngineWeights(
          geometry,
          live,
          new Fp8BlockInstall(
              live,
              q.received(),
              q.scales(),
              Fp8Format.format(spec.inferenceDtype()),
              q.block(),
              Fp8Format.rounding(spec.inferenceDtype()),
              q.members()));
    } catch (RuntimeException e) {
      live.close();
      throw e;
    }
  }

  private static LiveWeights live(
      java.util.Map<String, dev.mx.api.refit.ParamSpec> params,
      MemoryOps device,
      dev.mx.api.transport.Transport servedBy,
      long staging) {
    return servedBy != null && device == null
        ? LiveWeights.allocatedBy(params, servedBy, staging)
        : new LiveWeights(params, device, staging);
  }

  /** The staging budget a receiver takes when none is given (the setting, else the default). */
  private static long defaultStaging() {
    long configured = StagingWaves.configured(Settings.system());
    return configured > 0 ? configured : StagingWaves.DEFAULT_BYTES;
  }

  /** What installs a verified step into the live weights. */
  Installer installer() {
    return fp8 != null ? fp8 : live;
  }

  /** The last install's quantization error for the step report; empty when not quantizing. */
  Map<String, Object> quantizationMetrics() {
    Map<String, Object> m = new LinkedHashMap<>();
    if (fp8 != null) {
      QuantizationError e = fp8.lastError();
      m.put("quant_max_abs_err", (double) e.maxAbs());
      m.put("quant_max_rel_err", (double) e.maxRel());
    }
    return m;
  }
}
