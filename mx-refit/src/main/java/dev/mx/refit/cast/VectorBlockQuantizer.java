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
 * for byte. Works one band of {@code block} rows at a time, in two passes over it: the first keeps
 * a running {@code max|x|} per column (an array that stays in cache) and folds it into each tile's
 * amax; the second multiplies each element by its column's tile factor, saturates, and encodes
 * e4m3fn with the integer rounding of {@link VectorCasts}. The band is re-read from cache, so the
 * source streams from memory once. Loaded only when {@link CastKernels#VECTOR}.
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
  private static final ValueLayout.OfShort I16 =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(LE);
  private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(LE);
  private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(LE);

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
      int block,
      boolean measure) {
    boolean bf16 = from == DType.BF16;
    int esize = from.elementSize();
    long rows = shape.dim(shape.rank() - 2);
    int cols = Math.toIntExact(shape.dim(shape.rank() - 1));
    long matrices = shape.numel() / Math.max(1, rows * cols);
    int blockCols = Math.toIntExact(BlockQuantizer.ceilDiv(cols, block));
    long blockRows = BlockQuantizer.ceilDiv(rows, block);
    int vectorCols = cols - cols % LANES;
    float[] colMax = new float[cols];
    float[] factor = new float[cols];
    float[] scaleInv = new float[cols];
    FloatVector maxAbs = FloatVector.zero(FLOATS);
    FloatVector maxRel = FloatVector.zero(FLOATS);
    float tailAbs = 0;
    float tailRel = 0;
    for (long m = 0; m < matrices; m++) {
      long base = m * rows * cols;
      for (long br = 0; br < blockRows; br++) {
        long r0 = br * block;
        long r1 = Math.min(rows, r0 + block);
        java.util.Arrays.fill(colMax, 0f);
        for (long r = r0; r < r1; r++) {
          long row = (base + r * cols) * esize;
          for (int c = 0; c < vectorCols; c += LANES) {
            FloatVector x = load(src, row + (long) c * esize, bf16);
            FloatVector.fromArray(FLOATS, colMax, c).max(x.abs()).intoArray(colMax, c);
          }
          for (int c = vectorCols; c < cols; c++) {
            colMax[c] = Math.max(colMax[c], Math.abs(scalar(src, row + (long) c * esize, bf16)));
          }
        }
        long scaleRow = 4 * (m * blockRows + br) * blockCols;
        for (int bc = 0; bc < blockCols; bc++) {
          int c0 = bc * block;
          int c1 = Math.min(cols, c0 + block);
          float amax = BlockQuantizer.AMAX_FLOOR;
          for (int c = c0; c < c1; c++) {
            amax = Math.max(amax, colMax[c]);
          }
          float f = BlockQuantizer.E4M3_MAX / amax;
          float s = amax / BlockQuantizer.E4M3_MAX;
          scales.set(F32, scaleRow + 4L * bc, s);
          java.util.Arrays.fill(factor, c0, c1, f);
          java.util.Arrays.fill(scaleInv, c0, c1, s);
        }
        for (long r = r0; r < r1; r++) {
          long first = base + r * cols;
          long row = first * esize;
          for (int c = 0; c < vectorCols; c += LANES) {
            FloatVector x = load(src, row + (long) c * esize, bf16);
            FloatVector v =
                x.mul(FloatVector.fromArray(FLOATS, factor, c))
                    .max(-BlockQuantizer.E4M3_MAX)
                    .min(BlockQuantizer.E4M3_MAX);
            IntVector vb = (IntVector) v.viewAsIntegralLanes();
            IntVector a = vb.and(0x7fff_ffff);
            IntVector o =
                a.sub(120 << 23)
                    .add(a.lanewise(VectorOperators.LSHR, 20).and(1))
                    .add(0x7_ffff)
                    .lanewise(VectorOperators.LSHR, 20);
            // Below 2^-6: adding 2^14 (ulp 2^-9) rounds to the subnormal's code.
            IntVector sub =
                ((IntVector)
                        ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p14f).viewAsIntegralLanes())
                    .sub(0x4680_0000);
            o = o.blend(sub, a.compare(VectorOperators.LT, 0x3c80_0000));
            // Saturated already: only NaN is left above 448.
            o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x43e0_0000));
            o = o.or(vb.lanewise(VectorOperators.LSHR, 24).and(0x80));
            ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
                .intoMemorySegment(dst, first + c, LE);
            if (measure) {
              FloatVector d =
                  decode(o).mul(FloatVector.fromArray(FLOATS, scaleInv, c));
              FloatVector ax = x.abs();
              VectorMask<Float> finite = ax.compare(VectorOperators.LT, Float.POSITIVE_INFINITY);
              FloatVector err = d.sub(x).abs();
              maxAbs = maxAbs.blend(maxAbs.max(err), finite);
              maxRel =
                  maxRel.blend(
                      maxRel.max(err.div(ax)),
                      finite.and(ax.compare(VectorOperators.NE, 0f)));
            }
          }
          for (int c = vectorCols; c < cols; c++) {
            float x = scalar(src, row + (long) c * esize, bf16);
            byte q = BlockQuantizer.encode(x * factor[c]);
            dst.set(ValueLayout.JAVA_BYTE, first + c, q);
            if (measure && Float.isFinite(x)) {
              float err = Math.abs(MiniFloat.E4M3FN.toFloat(q) * scaleInv[c] - x);
              tailAbs = Math.max(tailAbs, err);
              if (x != 0) {
                tailRel = Math.max(tailRel, err / Math.abs(x));
              }
            }
          }
        }
      }
    }
    if (!measure) {
      return QuantizationError.NONE;
    }
    return new QuantizationError(
        Math.max(tailAbs, maxAbs.reduceLanes(VectorOperators.MAX)),
        Math.max(tailRel, maxRel.reduceLanes(VectorOperators.MAX)));
  }

  private static FloatVector load(MemorySegment src, long offset, boolean bf16) {
    if (bf16) {
      // S2I sign-extends; the extension shifts out.
      return (FloatVector)
          ((IntVector)
                  ShortVector.fromMemorySegment(SHORTS, src, offset, LE)
                      .convertShape(VectorOperators.S2I, INTS, 0))
              .lanewise(VectorOperators.LSHL, 16)
              .viewAsFloatingLanes();
    }
    return FloatVector.fromMemorySegment(FLOATS, src, offset, LE);
  }

  private static float scalar(MemorySegment src, long offset, boolean bf16) {
    return bf16
        ? Casts.bf16ToF32(src.get(I16, offset))
        : Float.intBitsToFloat(src.get(I32, offset));
  }

  /** The f32 value of finite e4m3fn codes (NaN lanes are never measured). */
  private static FloatVector decode(IntVector code) {
    IntVector cabs = code.lanewise(VectorOperators.LSHL, 20).and(0x07f0_0000);
    IntVector b = cabs.add(120 << 23);
    // Subnormal: read as 2^-6 * (1 + m), then subtract 2^-6.
    b =
        b.blend(
            ((IntVector)
                ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                    .sub(0x1.0p-6f)
                    .viewAsIntegralLanes()),
            cabs.compare(VectorOperators.LT, 0x0080_0000));
    b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
    return (FloatVector) b.viewAsFloatingLanes();
  }
}
