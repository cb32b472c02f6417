package dev.mx.refit;

import dev.mx.api.Shape;
import dev.mx.api.annotation.Internal;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ParamSpec;
import dev.mx.refit.cast.BlockQuantizer;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantFormat;
import dev.mx.refit.cast.QuantizationError;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.LongStream;

/**
 * Installs verified receive buffers into engine weights that hold some parameters FP8-quantized
 * (block-quantized by default, or in another {@link QuantFormat}): those are quantized ({@link
 * BlockQuantizer}) from the pulled bytes straight into the live e4m3fn weight and its scale tensor
 * ({@code _scale_inv} or {@code _scale}), the rest are copied as {@link LiveWeights} does. Like a
 * plain install it runs only after the receiver verified every byte against the publishers'
 * digests, and it checks every buffer before it writes any, so a step's weights and scales go live
 * together or not at all. Host live weights only. Each block's factor is computed by the {@link
 * Fp8Rounding} given (the receivers' {@code mx.refit.fp8-rounding}, {@code vllm} unless set).
 */
@Internal
public final class Fp8BlockInstall implements Installer {
  private final LiveWeights live;
  private final Map<String, ParamSpec> received;
  private final Map<String, String> scales;
  private final QuantFormat format;
  private final int block;
  private final Fp8Rounding rounding;
  private final Map<String, long[]> members;
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
    this(live, received, scales, QuantFormat.BLOCK, block, rounding, Map.of());
  }

  /**
   * As above, in {@code format} (its scales as {@link QuantFormat#engineScaleShape} shapes them),
   * the parameters of {@code members} fused: each matrix of such a parameter holds members of those
   * rows, in order, each quantized on its own block grid (its last block row partial where its rows
   * are not a multiple of the block), its scales' block rows following the previous member's. A
   * parameter not named is one member; members matter to the block formats only, whose tiles could
   * span two.
   *
   * @param members quantized weight name → the rows of each member of its matrices
   */
  public Fp8BlockInstall(
      LiveWeights live,
      Map<String, ParamSpec> received,
      Map<String, String> scales,
      QuantFormat format,
      int block,
      Fp8Rounding rounding,
      Map<String, long[]> members) {
    if (live.memory().isDevice()) {
      throw new IllegalArgumentException(
          "fp8 block quantization installs into host weights; these live in " + live.memory());
    }
    this.live = live;
    this.received = Map.copyOf(received);
    this.scales = Map.copyOf(scales);
    this.format = java.util.Objects.requireNonNull(format, "format");
    this.block = block;
    this.rounding = java.util.Objects.requireNonNull(rounding, "rounding");
    Map<String, long[]> m = new LinkedHashMap<>();
    members.forEach((k, v) -> m.put(k, v.clone()));
    this.members = Map.copyOf(m);
    for (Map.Entry<String, String> e : this.scales.entrySet()) {
      ParamSpec from = this.received.get(e.getKey());
      if (from == null || !BlockQuantizer.supportsSource(from.dtype())) {
        throw new IllegalArgumentException(
            "cannot block-quantize parameter '"
                + e.getKey()
                + "': "
                + (from == null ? "it is not received" : "it is received as " + from.dtype()));
      }
      MemorySegment w = live.parameter(e.getKey());
      MemorySegment s = live.parameter(e.getValue());
      long[] rows = this.members.get(e.getKey());
      Shape shape = from.shape();
      long want = shape.numel();
      if (rows != null
          && (shape.rank() < 2 || LongStream.of(rows).sum() != shape.dim(shape.rank() - 2))) {
        throw new IllegalArgumentException(
            "cannot quantize parameter '"
                + e.getKey()
                + "' of shape "
                + shape
                + " as members of "
                + java.util.Arrays.toString(rows)
                + " rows: they do not add up to its rows");
      }
      long wantScales =
          format.engineScaleShape(shape, block, rows).numel() * format.scaleDtype().elementSize();
      if (w.byteSize() != want || s.byteSize() != wantScales) {
        throw new IllegalArgumentException(
            "cannot block-quantize parameter '"
                + e.getKey()
                + "': its live weight holds "
                + w.byteSize()
                + " bytes and '"
                + e.getValue()
                + "' "
                + s.byteSize()
                + "; "
                + shape
                + " in "
                + format.label()
                + " needs "
                + want
                + " and "
                + wantScales);
      }
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
                quantize(
                    e.getValue(),
                    spec,
                    live.parameter(e.getKey()),
                    live.parameter(scale),
                    members.get(e.getKey())));
      }
    }
    live.install(step, copied);
    lastError = error;
  }

  /**
   * Quantizes one parameter: whole when every member is a multiple of the block (the grids
   * coincide), else member by member of every matrix, each a smaller tensor of the same columns.
   */
  private QuantizationError quantize(
      MemorySegment src, ParamSpec spec, MemorySegment dst, MemorySegment scales, long[] rows) {
    // The install is on the critical path: every core the JVM has.
    int threads = Runtime.getRuntime().availableProcessors();
    Shape shape = spec.shape();
    boolean aligned = true;
    for (long r : rows == null || !format.hasBlock() ? new long[0] : rows) {
      aligned &= r % block == 0;
    }
    if (aligned) {
      return BlockQuantizer.quantize(
          src, spec.dtype(), dst, scales, shape, format, block, true, threads, rounding);
    }
    int rank = shape.rank();
    long cols = shape.dim(rank - 1);
    long matrixRows = shape.dim(rank - 2);
    long matrices = shape.numel() / (matrixRows * cols);
    long blockCols = Math.ceilDiv(cols, block);
    long scaleRows = 0;
    for (long r : rows) {
      scaleRows += Math.ceilDiv(r, block);
    }
    int es = spec.dtype().elementSize();
    QuantizationError error = QuantizationError.NONE;
    for (long m = 0; m < matrices; m++) {
      long row = 0;
      long scaleRow = 0;
      for (long r : rows) {
        long first = (m * matrixRows + row) * cols;
        long firstScale = (m * scaleRows + scaleRow) * blockCols;
        long memberScaleRows = Math.ceilDiv(r, block);
        error =
            error.max(
                BlockQuantizer.quantize(
                    src.asSlice(first * es, r * cols * es),
                    spec.dtype(),
                    dst.asSlice(first, r * cols),
                    scales.asSlice(4 * firstScale, 4 * memberScaleRows * blockCols),
                    Shape.of(r, cols),
                    format,
                    block,
                    true,
                    threads,
                    rounding));
        row += r;
        scaleRow += memberScaleRows;
      }
    }
    return error;
  }

  /** The quantization error of the last install, over every quantized parameter. */
  public QuantizationError lastError() {
    return lastError;
  }

  public int block() {
    return block;
  }

  public QuantFormat format() {
    return format;
  }

  public Fp8Rounding rounding() {
    return rounding;
  }
}
