package dev.mx.refit.cast;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link BlockQuantizer}'s rule on the Vector API, from bf16 or f32, equal to the scalar loop byte
 * for byte, in every {@link QuantFormat}. Works one band of a tile's rows at a time, in two passes
 * over it: the first keeps a running {@code max|x|} per column (an array that stays in cache) and
 * folds it into each tile's amax; the second multiplies each element by its column's tile factor,
 * saturates, and encodes e4m3fn with the integer rounding of {@link VectorCasts}. The band is
 * re-read from cache, so the source streams from memory once. Loaded only when {@link
 * CastKernels#VECTOR}.
 */
final class VectorBlockQuantizer {
  private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> FLOATS =
      VectorSpecies.of(float.class, VectorShape.forBitSize(INTS.vectorBitSize()));
  private static final VectorSpecies<Short> SHORTS =
      VectorSpecies.of(short.class, VectorShape.forBitSize(INTS.vectorBitSize() / 2));
  private static final VectorSpecies<Byte> BYTES =
      VectorSpecies.of(byte.class, VectorShape.forBitSize(INTS.vectorBitSize() / 4));
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  private static final int LANES = INTS.length();
  private static final int CHUNK_BYTES = 256 << 10;
  private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
  private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(LE);

  private VectorBlockQuantizer() {}

  static boolean handles(DType from) {
    return from == DType.BF16 || from == DType.F32;
  }

  static QuantizationError quantize(
      MemorySegment src,
      DType from,
      MemorySegment dst,
      MemorySegment scales,
      Shape shape,
      QuantFormat format,
      int block,
      boolean measure,
      Fp8Rounding rounding) {
    boolean bf16 = from == DType.BF16;
    int esize = from.elementSize();
    BlockQuantizer.Grid g = BlockQuantizer.Grid.of(shape, format, block);
    long tileRows = g.tileRows();
    int tileCols = Math.toIntExact(g.tileCols());
    long rows = g.rows();
    int cols = Math.toIntExact(g.cols());
    long matrices = g.matrices();
    int blockCols = Math.toIntExact(g.blockCols());
    long blockRows = g.blockRows();
    if (tileRows == 1 && tileCols % LANES == 0 && cols % tileCols == 0) {
      return rowTiles(
          src, bf16, dst, scales, matrices * rows, cols, tileCols, format, rounding, measure);
    }
    // Columns of whole tiles whose band fits in cache (about 256 KiB), so the second pass over it
    // reads it from there.
    int chunk =
        (int) Math.min(cols, Math.max(1, (CHUNK_BYTES / (tileRows * esize)) / tileCols) * tileCols);
    // max |x| per column of the band, as f32 bits.
    int[] colMax = new int[cols];
    float[] factor = new float[cols];
    float[] scaleInv = new float[cols];
    // {max abs, max relative} error so far.
    float[] error = new float[2];
    for (long m = 0; m < matrices; m++) {
      long base = m * rows * cols;
      for (long br = 0; br < blockRows; br++) {
        long r0 = br * tileRows;
        long r1 = Math.min(rows, r0 + tileRows);
        long scaleRow = (m * blockRows + br) * blockCols;
        for (int k0 = 0; k0 < cols; k0 += chunk) {
          int k1 = Math.min(cols, k0 + chunk);
          int kv = k0 + (k1 - k0) / LANES * LANES;
          // The band's first row sets the column maxima, later rows raise them.
          for (long r = r0; r < r1; r++) {
            long row = (base + r * cols) * esize;
            boolean firstRow = r == r0;
            columnMax(src, row, colMax, k0, kv, bf16, firstRow);
            for (int c = kv; c < k1; c++) {
              int bits =
                  Float.floatToRawIntBits(scalar(src, row + (long) c * esize, bf16)) & 0x7fff_ffff;
              colMax[c] = firstRow ? bits : Math.max(colMax[c], bits);
            }
          }
          for (int c0 = k0; c0 < k1; c0 += tileCols) {
            int c1 = Math.min(cols, c0 + tileCols);
            float amax = format.amax(Float.intBitsToFloat(tileMax(colMax, c0, c1)));
            format.writeScale(scales, scaleRow + c0 / tileCols, amax);
            java.util.Arrays.fill(factor, c0, c1, format.factor(amax, rounding));
            if (measure) {
              java.util.Arrays.fill(scaleInv, c0, c1, format.scale(amax));
            }
          }
          for (long r = r0; r < r1; r++) {
            long first = base + r * cols;
            long row = first * esize;
            encodeRow(src, row, factor, -1, dst, first, k0, kv, bf16);
            if (measure) {
              measureRow(src, row, dst, first, scaleInv, -1, k0, kv, bf16, error);
            }
            for (int c = kv; c < k1; c++) {
              float x = scalar(src, row + (long) c * esize, bf16);
              byte q = BlockQuantizer.encode(x * factor[c]);
              dst.set(ValueLayout.JAVA_BYTE, first + c, q);
              if (measure && Float.isFinite(x)) {
                float err = Math.abs(MiniFloat.E4M3FN.toFloat(q) * scaleInv[c] - x);
                error[0] = Math.max(error[0], err);
                if (x != 0) {
                  error[1] = Math.max(error[1], err / Math.abs(x));
                }
              }
            }
          }
        }
      }
    }
    if (!measure) {
      return QuantizationError.NONE;
    }
    return new QuantizationError(error[0], error[1]);
  }

  /**
   * Tiles one row high and a whole number of vectors wide ({@code mxfp8}'s 1 x 32, {@code
   * fp8-channel}'s whole rows): each tile's amax straight from the row (no column maxima to store
   * and reload), then the row encoded while it is still in cache.
   */
  private static QuantizationError rowTiles(
      MemorySegment src,
      boolean bf16,
      MemorySegment dst,
      MemorySegment scales,
      long rows,
      int cols,
      int tileCols,
      QuantFormat format,
      Fp8Rounding rounding,
      boolean measure) {
    int esize = bf16 ? 2 : 4;
    int tiles = cols / tileCols;
    // A power-of-two tile keeps one factor per tile, read by shifting the column; else per column.
    int shift = Integer.bitCount(tileCols) == 1 ? Integer.numberOfTrailingZeros(tileCols) : -1;
    int[] tileMax = new int[tiles];
    float[] factor = new float[shift >= 0 ? tiles : cols];
    float[] scaleInv = new float[measure ? factor.length : 0];
    float[] error = new float[2];
    for (long r = 0; r < rows; r++) {
      long first = r * cols;
      long row = first * esize;
      for (int t = 0; t < tiles; t++) {
        tileMax[t] = rowMax(src, row, t * tileCols, (t + 1) * tileCols, bf16);
      }
      int t = 0;
      if (format == QuantFormat.MXFP8 && shift >= 0) {
        t = mxScales(tileMax, tiles, scales, r * tiles, factor, measure ? scaleInv : null);
      }
      for (; t < tiles; t++) {
        float amax = format.amax(Float.intBitsToFloat(tileMax[t]));
        format.writeScale(scales, r * tiles + t, amax);
        int c0 = shift >= 0 ? t : t * tileCols;
        int c1 = shift >= 0 ? t + 1 : c0 + tileCols;
        java.util.Arrays.fill(factor, c0, c1, format.factor(amax, rounding));
        if (measure) {
          java.util.Arrays.fill(scaleInv, c0, c1, format.scale(amax));
        }
      }
      encodeRow(src, row, factor, shift, dst, first, 0, cols, bf16);
      if (measure) {
        measureRow(src, row, dst, first, scaleInv, shift, 0, cols, bf16, error);
      }
    }
    return measure ? new QuantizationError(error[0], error[1]) : QuantizationError.NONE;
  }

  /**
   * {@link QuantFormat#MXFP8}'s scale bytes, factors and (when {@code scale} is not null) scales of
   * whole vectors of tiles, from their {@code max|x|} bits: {@code e = clamp((bits >>> 23) - 127 -
   * 8, -127, 127)} (a zero or subnormal amax is below the clamp, as {@link Math#getExponent} has
   * it), byte {@code e + 127}, factor {@code 2^-e}; an infinite or NaN amax the NaN byte and
   * factor.
   *
   * @return the tiles done (the rest are left to the scalar rule)
   */
  private static int mxScales(
      int[] tileMax, int tiles, MemorySegment scales, long at, float[] factor, float[] scale) {
    int t = 0;
    for (; t + LANES <= tiles; t += LANES) {
      IntVector bits = IntVector.fromArray(INTS, tileMax, t);
      VectorMask<Integer> nan = bits.compare(VectorOperators.GE, 0x7f80_0000);
      IntVector e =
          bits.lanewise(VectorOperators.LSHR, 23)
              .sub(127 + QuantFormat.E4M3_EMAX)
              .max(-127)
              .min(127);
      // 2^-e: normal down to 2^-126; 2^-127 is the subnormal 0x0040_0000.
      IntVector f =
          e.neg()
              .add(127)
              .lanewise(VectorOperators.LSHL, 23)
              .blend(0x0040_0000, e.compare(VectorOperators.EQ, 127))
              .blend(0x7fc0_0000, nan);
      ((FloatVector) f.viewAsFloatingLanes()).intoArray(factor, t);
      if (scale != null) {
        IntVector s =
            e.add(127)
                .lanewise(VectorOperators.LSHL, 23)
                .blend(0x0040_0000, e.compare(VectorOperators.EQ, -127))
                .blend(0x7fc0_0000, nan);
        ((FloatVector) s.viewAsFloatingLanes()).intoArray(scale, t);
      }
      ((ByteVector) e.add(127).blend(0xff, nan).convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(scales, at + t, LE);
    }
    return t;
  }

  /** {@code max|x|} of a contiguous {@code rows × cols} run, as f32 bits (NaN above infinity). */
  static int maxAbsBits(MemorySegment src, boolean bf16, long rows, int cols) {
    int esize = bf16 ? 2 : 4;
    int kv = cols / LANES * LANES;
    int max = 0;
    for (long r = 0; r < rows; r++) {
      long row = r * cols * esize;
      max = Math.max(max, rowMax(src, row, 0, kv, bf16));
      for (int c = kv; c < cols; c++) {
        max =
            Math.max(
                max,
                Float.floatToRawIntBits(scalar(src, row + (long) c * esize, bf16)) & 0x7fff_ffff);
      }
    }
    return max;
  }

  /**
   * Encodes a contiguous {@code rows × cols} run with one {@code factor} (a per-tensor tile's),
   * measuring the error against {@code scale} when asked.
   */
  static QuantizationError encodeRows(
      MemorySegment src,
      boolean bf16,
      MemorySegment dst,
      long rows,
      int cols,
      float factor,
      float scale,
      boolean measure) {
    int esize = bf16 ? 2 : 4;
    int kv = cols / LANES * LANES;
    // One entry read for every column: c >>> 31 is 0.
    float[] factors = {factor};
    float[] scales = {scale};
    float[] error = new float[2];
    for (long r = 0; r < rows; r++) {
      long first = r * cols;
      long row = first * esize;
      encodeRow(src, row, factors, 31, dst, first, 0, kv, bf16);
      if (measure) {
        measureRow(src, row, dst, first, scales, 31, 0, kv, bf16, error);
      }
      for (int c = kv; c < cols; c++) {
        float x = scalar(src, row + (long) c * esize, bf16);
        byte q = BlockQuantizer.encode(x * factor);
        dst.set(ValueLayout.JAVA_BYTE, first + c, q);
        if (measure && Float.isFinite(x)) {
          float err = Math.abs(MiniFloat.E4M3FN.toFloat(q) * scale - x);
          error[0] = Math.max(error[0], err);
          if (x != 0) {
            error[1] = Math.max(error[1], err / Math.abs(x));
          }
        }
      }
    }
    return measure ? new QuantizationError(error[0], error[1]) : QuantizationError.NONE;
  }

  /**
   * {@code max|x|} over columns {@code [from, to)} of one row (a multiple of the lanes), as bits.
   */
  private static int rowMax(MemorySegment src, long row, int from, int to, boolean bf16) {
    int esize = bf16 ? 2 : 4;
    IntVector acc = IntVector.zero(INTS);
    for (int c = from; c < to; c += LANES) {
      long at = row + (long) c * esize;
      FloatVector x =
          bf16
              ? (FloatVector)
                  ((IntVector)
                          ShortVector.fromMemorySegment(SHORTS, src, at, LE)
                              .convertShape(VectorOperators.S2I, INTS, 0))
                      .lanewise(VectorOperators.LSHL, 16)
                      .viewAsFloatingLanes()
              : FloatVector.fromMemorySegment(FLOATS, src, at, LE);
      acc = acc.max(((IntVector) x.viewAsIntegralLanes()).and(0x7fff_ffff));
    }
    return acc.reduceLanes(VectorOperators.MAX);
  }

  /**
   * The largest of {@code colMax[c0, c1)} (absolute values as f32 bits, never negative): one row's
   * worth for the one-row tiles of mxfp8 and fp8-channel, so it runs at vector width.
   */
  private static int tileMax(int[] colMax, int c0, int c1) {
    int c = c0;
    IntVector acc = IntVector.zero(INTS);
    for (; c + LANES <= c1; c += LANES) {
      acc = acc.max(IntVector.fromArray(INTS, colMax, c));
    }
    int max = acc.reduceLanes(VectorOperators.MAX);
    for (; c < c1; c++) {
      max = Math.max(max, colMax[c]);
    }
    return max;
  }

  // Each loop below is one method with its loads, rounding and stores written out: a helper that
  // returned a vector would be compiled on its own and box every vector it hands back (see
  // VectorCasts).

  /** {@code colMax[c] = max(colMax[c], |x[c]|)} over columns {@code [from, to)} of one row. */
  private static void columnMax(
      MemorySegment src, long row, int[] colMax, int from, int to, boolean bf16, boolean set) {
    int esize = bf16 ? 2 : 4;
    for (int c = from; c < to; c += LANES) {
      long at = row + (long) c * esize;
      FloatVector x =
          bf16
              ? (FloatVector)
                  ((IntVector)
                          ShortVector.fromMemorySegment(SHORTS, src, at, LE)
                              .convertShape(VectorOperators.S2I, INTS, 0))
                      .lanewise(VectorOperators.LSHL, 16)
                      .viewAsFloatingLanes()
              : FloatVector.fromMemorySegment(FLOATS, src, at, LE);
      // |x| as bits: non-negative floats order as their bits, NaN above infinity, so an integer max
      // is the float max (NaN propagating) in one instruction.
      IntVector abs = ((IntVector) x.viewAsIntegralLanes()).and(0x7fff_ffff);
      (set ? abs : IntVector.fromArray(INTS, colMax, c).max(abs)).intoArray(colMax, c);
    }
  }

  /** Codes of the vector part of one row: scaled by its tiles' factors, saturated, rounded. */
  private static void encodeRow(
      MemorySegment src,
      long row,
      float[] factor,
      int tileShift,
      MemorySegment dst,
      long first,
      int from,
      int to,
      boolean bf16) {
    int esize = bf16 ? 2 : 4;
    for (int c = from; c < to; c += LANES) {
      long at = row + (long) c * esize;
      // S2I sign-extends; the extension shifts out.
      FloatVector x =
          bf16
              ? (FloatVector)
                  ((IntVector)
                          ShortVector.fromMemorySegment(SHORTS, src, at, LE)
                              .convertShape(VectorOperators.S2I, INTS, 0))
                      .lanewise(VectorOperators.LSHL, 16)
                      .viewAsFloatingLanes()
              : FloatVector.fromMemorySegment(FLOATS, src, at, LE);
      // One factor per column, or per tile of 2^tileShift columns (at least a vector's worth).
      FloatVector f =
          tileShift < 0
              ? FloatVector.fromArray(FLOATS, factor, c)
              : FloatVector.broadcast(FLOATS, factor[c >>> tileShift]);
      IntVector vb = (IntVector) x.mul(f).viewAsIntegralLanes();
      IntVector a = vb.and(0x7fff_ffff);
      IntVector o =
          a.sub(120 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 20).and(1))
              .add(0x7_ffff)
              .lanewise(VectorOperators.LSHR, 20);
      // Below 2^-6: adding 2^14 (ulp 2^-9) rounds to the subnormal's code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p14f).viewAsIntegralLanes())
              .sub(0x4680_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3c80_0000));
      // Saturation, in integers (cheaper than float min/max): above 448 is 448 (up to 464 it rounds
      // there anyway), infinity included; NaN is the NaN code.
      o = o.blend(0x7e, a.compare(VectorOperators.GT, 0x43e0_0000));
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(vb.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, first + c, LE);
    }
  }

  /**
   * Folds the error of the vector part of one row, just encoded, into {@code error}: each code
   * decoded to f32 and multiplied by its tile's scale_inv, against the finite source values.
   */
  private static void measureRow(
      MemorySegment src,
      long row,
      MemorySegment dst,
      long first,
      float[] scaleInv,
      int tileShift,
      int from,
      int to,
      boolean bf16,
      float[] error) {
    int esize = bf16 ? 2 : 4;
    // Both maxima as f32 bits: errors are non-negative or NaN, so an integer max is the float max.
    IntVector maxAbs = IntVector.zero(INTS);
    IntVector maxRel = IntVector.zero(INTS);
    for (int c = from; c < to; c += LANES) {
      long at = row + (long) c * esize;
      FloatVector x =
          bf16
              ? (FloatVector)
                  ((IntVector)
                          ShortVector.fromMemorySegment(SHORTS, src, at, LE)
                              .convertShape(VectorOperators.S2I, INTS, 0))
                      .lanewise(VectorOperators.LSHL, 16)
                      .viewAsFloatingLanes()
              : FloatVector.fromMemorySegment(FLOATS, src, at, LE);
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, dst, first + c, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
      IntVector cabs = code.lanewise(VectorOperators.LSHL, 20).and(0x07f0_0000);
      IntVector b = cabs.add(120 << 23);
      // Subnormal: read as 2^-6 * (1 + m), then subtract 2^-6. NaN codes are never measured.
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-6f)
                      .viewAsIntegralLanes()),
              cabs.compare(VectorOperators.LT, 0x0080_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      FloatVector d =
          ((FloatVector) b.viewAsFloatingLanes())
              .mul(
                  tileShift < 0
                      ? FloatVector.fromArray(FLOATS, scaleInv, c)
                      : FloatVector.broadcast(FLOATS, scaleInv[c >>> tileShift]));
      FloatVector ax = x.abs();
      IntVector axBits = (IntVector) ax.viewAsIntegralLanes();
      VectorMask<Integer> skipped = axBits.compare(VectorOperators.GE, 0x7f80_0000);
      FloatVector err = d.sub(x).abs();
      maxAbs = maxAbs.max(((IntVector) err.viewAsIntegralLanes()).blend(0, skipped));
      maxRel =
          maxRel.max(
              ((IntVector) err.div(ax).viewAsIntegralLanes())
                  .blend(0, skipped.or(axBits.compare(VectorOperators.EQ, 0))));
    }
    error[0] = Math.max(error[0], Float.intBitsToFloat(maxAbs.reduceLanes(VectorOperators.MAX)));
    error[1] = Math.max(error[1], Float.intBitsToFloat(maxRel.reduceLanes(VectorOperators.MAX)));
  }

  private static float scalar(MemorySegment src, long offset, boolean bf16) {
    return bf16
        ? Casts.bf16ToF32(src.get(I16, offset))
        : Float.intBitsToFloat(src.get(I32, offset));
  }
}
