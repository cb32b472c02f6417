package dev.mx.refit.cast;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.annotation.Internal;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * FP8 block quantization, the per-block cast DeepGEMM-style kernels serve from: a tensor's last two
 * dimensions (rows × cols; leading dimensions, such as experts, are separate matrices) are cut into
 * {@code block × block} tiles, the last ones partial where a size is not a multiple of the block.
 * Over each tile of values widened to f32: {@code amax = max(max|x|, 1e-4)}; every element becomes
 * {@code e4m3fn(clamp(x * factor, ±448))} with {@code factor = 448 / amax} ({@link
 * Fp8Rounding#EXACT}; the other {@link Fp8Rounding} modes compute it as vLLM's or DeepGEMM's
 * kernels do), product and quotient in f32, rounded to nearest even (the clamp is the saturation:
 * magnitudes at or above 464 would otherwise round to NaN); the tile's {@code scale_inv = amax /
 * 448} is written in f32, row-major {@code [..., ceil(rows/block), ceil(cols/block)]}. A NaN in a
 * tile makes its amax, scale and codes NaN.
 *
 * <p>The other {@link QuantFormat}s run through the same loops with their own tiles (per tensor,
 * per row, 1 × 32) and scale rules (power-of-two f32, E8M0 bytes).
 *
 * <p>Runs on {@link VectorBlockQuantizer} from bf16 and f32 when the vector casts are on ({@link
 * Casts#vectorized()}); the scalar loop here is the reference and produces the same bytes.
 */
@Internal
public final class BlockQuantizer {
  /** The largest finite e4m3fn value. */
  public static final float E4M3_MAX = 448f;

  /** The smallest amax a tile is scaled by (a tile of zeros would otherwise divide by zero). */
  public static final float AMAX_FLOOR = 1e-4f;

  /** The block size engines serve fp8 weights with (DeepSeek-V3, vLLM's default). */
  public static final int DEFAULT_BLOCK = 128;

  private static final ValueLayout.OfShort I16 =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt I32 =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** An unstarted thread: memory accessible by it is accessible by the fork-join pool's threads. */
  private static final Thread ANY_OTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

  private BlockQuantizer() {}

  /** Whether {@link #quantize} reads this source dtype. */
  public static boolean supportsSource(DType from) {
    return from == DType.BF16 || from == DType.F16 || from == DType.F32;
  }

  /**
   * The shape of the scales of a weight of {@code shape}: its leading dimensions, then {@code
   * ceil(rows/block), ceil(cols/block)}.
   *
   * @throws IllegalArgumentException when the weight has fewer than two dimensions or the block is
   *     not positive
   */
  public static Shape scaleShape(Shape shape, int block) {
    return scaleShape(shape, QuantFormat.BLOCK, block);
  }

  /**
   * The shape of the scales of a weight of {@code shape} in {@code format}: its leading dimensions,
   * then the tiles per column and per row ({@code [..., 1, 1]} per tensor, {@code [..., rows, 1]}
   * per channel, {@code [..., rows, ceil(cols/32)]} for MXFP8).
   */
  public static Shape scaleShape(Shape shape, QuantFormat format, int block) {
    checkShape(shape, block);
    long[] d = shape.dims().clone();
    int r = d.length;
    long rows = d[r - 2];
    long cols = d[r - 1];
    d[r - 2] = ceilDiv(rows, format.tileRows(block, rows));
    d[r - 1] = ceilDiv(cols, format.tileCols(block, cols));
    return Shape.of(d);
  }

  /**
   * Quantizes a contiguous row-major tensor {@code src} of {@code shape} in {@code from} into
   * e4m3fn codes {@code dst} (one byte per element) and f32 {@code scales} ({@link #scaleShape}).
   *
   * @param measure whether to compute the {@link QuantizationError} (costs a decode per element)
   * @return the error when measured, else {@link QuantizationError#NONE}
   */
  public static QuantizationError quantize(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      int block,
      boolean measure) {
    return quantize(
        src, from, dst, scales, shape, QuantFormat.BLOCK, block, measure, Fp8Rounding.EXACT);
  }

  /**
   * Quantizes into {@code format}: codes in {@code dst}, scales ({@link #scaleShape(Shape,
   * QuantFormat, int)}, of {@link QuantFormat#scaleDtype()}) in {@code scales}; {@code block} is
   * the tile of the block formats, ignored by the others.
   */
  public static QuantizationError quantize(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      QuantFormat format,
      int block,
      boolean measure,
      Fp8Rounding rounding) {
    checkBuffers(src, from, dst, scales, shape, format, block);
    if (CastKernels.VECTOR && VectorBlockQuantizer.handles(from)) {
      return VectorBlockQuantizer.quantize(
          src, from, dst, scales, shape, format, block, measure, rounding);
    }
    return quantizeScalar(src, from, dst, scales, shape, format, block, measure, rounding);
  }

  /**
   * As {@link #quantize}, on up to {@code threads} threads of the common fork-join pool (the
   * calling one among them): the tensor is cut into runs of whole block rows, each quantized on its
   * own as a smaller tensor of the same columns. Blocks never straddle two runs, so the bytes equal
   * {@link #quantize}'s for every thread count. Memory only its owner thread may access is
   * quantized on the calling thread.
   */
  public static QuantizationError quantize(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      int block,
      boolean measure,
      int threads) {
    return quantize(
        src,
        from,
        dst,
        scales,
        shape,
        QuantFormat.BLOCK,
        block,
        measure,
        threads,
        Fp8Rounding.EXACT);
  }

  /**
   * As the threaded {@code quantize} above, into {@code format}, the factor by {@code rounding}.
   */
  public static QuantizationError quantize(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      QuantFormat format,
      int block,
      boolean measure,
      int threads,
      Fp8Rounding rounding) {
    checkBuffers(src, from, dst, scales, shape, format, block);
    Grid g = Grid.of(shape, format, block);
    long rows = g.rows();
    long cols = g.cols();
    long blockRows = g.blockRows();
    long blockCols = g.blockCols();
    long units = g.matrices() * blockRows;
    int parts = (int) Math.min(Math.max(1, threads), units);
    boolean shared =
        src.isAccessibleBy(ANY_OTHER_THREAD)
            && dst.isAccessibleBy(ANY_OTHER_THREAD)
            && scales.isAccessibleBy(ANY_OTHER_THREAD);
    if (format == QuantFormat.TENSOR
        && units < threads
        && shared
        && CastKernels.VECTOR
        && VectorBlockQuantizer.handles(from)) {
      // Fewer matrices than threads: each matrix's one tile is cut into row runs instead.
      return tensorsOnThreads(src, from, dst, scales, g, measure, threads, rounding);
    }
    if (parts <= 1 || !shared) {
      return quantize(src, from, dst, scales, shape, format, block, measure, rounding);
    }
    int es = from.elementSize();
    int ss = format.scaleBytes();
    long tileRows = g.tileRows();
    // Part k takes block-row units [k*units/parts, (k+1)*units/parts), split at matrix ends.
    java.util.List<long[]> runs = new java.util.ArrayList<>();
    for (int k = 0; k < parts; k++) {
      long u0 = k * units / parts;
      long u1 = (k + 1) * units / parts;
      while (u0 < u1) {
        long m = u0 / blockRows;
        long end = Math.min(u1, (m + 1) * blockRows);
        runs.add(new long[] {m, u0 % blockRows, end - m * blockRows});
        u0 = end;
      }
    }
    return runs.parallelStream()
        .map(
            r -> {
              long m = r[0];
              long r0 = r[1] * tileRows;
              long r1 = Math.min(rows, r[2] * tileRows);
              long first = m * rows * cols + r0 * cols;
              long n = (r1 - r0) * cols;
              long scaleFirst = (m * blockRows + r[1]) * blockCols;
              long nScales = (r[2] - r[1]) * blockCols;
              // A run of whole tiles of rows: the same tiles as in the whole matrix (a per-tensor
              // tile is one run).
              return quantize(
                  src.asSlice(first * es, n * es),
                  from,
                  dst.asSlice(first, n),
                  scales.asSlice(scaleFirst * ss, nScales * ss),
                  Shape.of(r1 - r0, cols),
                  format,
                  block,
                  measure,
                  rounding);
            })
        .reduce(QuantizationError.NONE, QuantizationError::max);
  }

  /**
   * {@link QuantFormat#TENSOR} on up to {@code threads} threads, one matrix after the other: the
   * matrix's {@code max|x|} over row runs in parallel, then its scale and factor, then the runs
   * encoded in parallel with that factor; the bytes are {@link #quantize}'s.
   */
  private static QuantizationError tensorsOnThreads(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Grid g,
      boolean measure,
      int threads,
      Fp8Rounding rounding) {
    QuantFormat format = QuantFormat.TENSOR;
    boolean bf16 = from == DType.BF16;
    int es = from.elementSize();
    long rows = g.rows();
    int cols = Math.toIntExact(g.cols());
    int parts = (int) Math.min(threads, Math.max(1, rows));
    QuantizationError error = QuantizationError.NONE;
    for (long m = 0; m < g.matrices(); m++) {
      long base = m * rows * cols;
      java.util.List<MemorySegment[]> runs = new java.util.ArrayList<>();
      for (int k = 0; k < parts; k++) {
        long r0 = k * rows / parts;
        long n = ((k + 1) * rows / parts - r0) * cols;
        long first = base + r0 * cols;
        runs.add(new MemorySegment[] {src.asSlice(first * es, n * es), dst.asSlice(first, n)});
      }
      int maxBits =
          runs.parallelStream()
              .mapToInt(
                  r -> VectorBlockQuantizer.maxAbsBits(r[0], bf16, r[1].byteSize() / cols, cols))
              .max()
              .orElse(0);
      float amax = format.amax(Float.intBitsToFloat(maxBits));
      format.writeScale(scales, m, amax);
      float factor = format.factor(amax, rounding);
      float scale = format.scale(amax);
      error =
          error.max(
              runs.parallelStream()
                  .map(
                      r ->
                          VectorBlockQuantizer.encodeRows(
                              r[0],
                              bf16,
                              r[1],
                              r[1].byteSize() / cols,
                              cols,
                              factor,
                              scale,
                              measure))
                  .reduce(QuantizationError.NONE, QuantizationError::max));
    }
    return error;
  }

  /** The scalar loop: the reference the vector kernel is tested against. */
  static QuantizationError quantizeScalar(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      int block,
      boolean measure) {
    return quantizeScalar(
        src, from, dst, scales, shape, QuantFormat.BLOCK, block, measure, Fp8Rounding.EXACT);
  }

  static QuantizationError quantizeScalar(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      QuantFormat format,
      int block,
      boolean measure,
      Fp8Rounding rounding) {
    checkBuffers(src, from, dst, scales, shape, format, block);
    Grid g = Grid.of(shape, format, block);
    long tileRows = g.tileRows();
    long tileCols = g.tileCols();
    long rows = g.rows();
    long cols = g.cols();
    long matrices = g.matrices();
    long blockCols = g.blockCols();
    long blockRows = g.blockRows();
    float maxAbs = 0;
    float maxRel = 0;
    for (long m = 0; m < matrices; m++) {
      long base = m * rows * cols;
      for (long br = 0; br < blockRows; br++) {
        long r0 = br * tileRows;
        long r1 = Math.min(rows, r0 + tileRows);
        for (long bc = 0; bc < blockCols; bc++) {
          long c0 = bc * tileCols;
          long c1 = Math.min(cols, c0 + tileCols);
          float max = 0;
          for (long r = r0; r < r1; r++) {
            for (long c = c0; c < c1; c++) {
              max = Math.max(max, Math.abs(load(src, from, base + r * cols + c)));
            }
          }
          float amax = format.amax(max);
          float factor = format.factor(amax, rounding);
          float scaleInv = format.scale(amax);
          format.writeScale(scales, (m * blockRows + br) * blockCols + bc, amax);
          for (long r = r0; r < r1; r++) {
            for (long c = c0; c < c1; c++) {
              long i = base + r * cols + c;
              float x = load(src, from, i);
              byte q = encode(x * factor);
              dst.set(ValueLayout.JAVA_BYTE, i, q);
              if (measure && Float.isFinite(x)) {
                float err = Math.abs(MiniFloat.E4M3FN.toFloat(q) * scaleInv - x);
                maxAbs = Math.max(maxAbs, err);
                if (x != 0) {
                  maxRel = Math.max(maxRel, err / Math.abs(x));
                }
              }
            }
          }
        }
      }
    }
    return measure ? new QuantizationError(maxAbs, maxRel) : QuantizationError.NONE;
  }

  /** A tile's amax from its {@code max|x|}: at least the floor; any NaN as the canonical NaN. */
  static float amax(float maxAbs) {
    return Float.isNaN(maxAbs) ? Float.NaN : Math.max(maxAbs, AMAX_FLOOR);
  }

  /** The e4m3fn code of a scaled value, saturated at ±448 (NaN stays NaN). */
  static byte encode(float scaled) {
    return MiniFloat.E4M3FN.fromFloatBits(
        Float.floatToRawIntBits(Math.min(Math.max(scaled, -E4M3_MAX), E4M3_MAX)));
  }

  private static float load(MemorySegment src, DType from, long i) {
    return switch (from) {
      case BF16 -> Casts.bf16ToF32(src.get(I16, 2 * i));
      case F16 -> Casts.f16ToF32(src.get(I16, 2 * i));
      case F32 -> Float.intBitsToFloat(src.get(I32, 4 * i));
      default -> throw new IllegalArgumentException("block quantization cannot read " + from);
    };
  }

  static long ceilDiv(long a, long b) {
    return (a + b - 1) / b;
  }

  /**
   * The tile grid of a {@code [..., rows, cols]} tensor: {@code matrices} of {@code rows × cols},
   * each cut into {@code blockRows × blockCols} tiles of {@code tileRows × tileCols} (the last ones
   * partial).
   */
  record Grid(
      long rows,
      long cols,
      long matrices,
      long tileRows,
      long tileCols,
      long blockRows,
      long blockCols) {
    static Grid of(Shape shape, QuantFormat format, int block) {
      long rows = shape.dim(shape.rank() - 2);
      long cols = shape.dim(shape.rank() - 1);
      long tr = format.tileRows(block, rows);
      long tc = format.tileCols(block, cols);
      return new Grid(
          rows,
          cols,
          shape.numel() / Math.max(1, rows * cols),
          tr,
          tc,
          ceilDiv(rows, tr),
          ceilDiv(cols, tc));
    }
  }

  private static void checkShape(Shape shape, int block) {
    if (block <= 0) {
      throw new IllegalArgumentException("block size must be positive, got " + block);
    }
    if (shape.rank() < 2) {
      throw new IllegalArgumentException(
          "block quantization needs a matrix (or a stack of them), got shape " + shape);
    }
  }

  private static void checkBuffers(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      QuantFormat format,
      int block) {
    if (!supportsSource(from)) {
      throw new IllegalArgumentException("block quantization reads bf16, f16 or f32, not " + from);
    }
    long n = shape.numel();
    long scaleBytes = scaleShape(shape, format, block).numel() * format.scaleBytes();
    if (src.byteSize() < n * from.elementSize()
        || dst.byteSize() < n
        || scales.byteSize() < scaleBytes) {
      throw new IllegalArgumentException(
          format.label()
              + " quantization of "
              + shape
              + " "
              + from
              + " needs "
              + n * from.elementSize()
              + " source bytes, "
              + n
              + " code bytes and "
              + scaleBytes
              + " scale bytes; got "
              + src.byteSize()
              + ", "
              + dst.byteSize()
              + " and "
              + scales.byteSize());
    }
  }
}
