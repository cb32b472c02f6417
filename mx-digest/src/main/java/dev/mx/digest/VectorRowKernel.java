package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The row kernel on the incubating Vector API. Only {@link RowKernels} touches this class, and only
 * after it has checked that {@code jdk.incubator.vector} is resolved, so the rest of the module
 * works without it.
 *
 * <p>Each row is summed in int lanes, which stay at full SIMD width, instead of widening every word
 * to long: one accumulator adds the words (wrapping mod 2^32) and one adds {@code word >> 16} (the
 * signed high halves; 1024 of them fit easily in an int). The exact row sum is then {@code (high <<
 * 16) + lowHalves}, where {@code lowHalves}, the sum of the unsigned low 16 bits, lies in {@code
 * [0, 2^26)} and therefore equals {@code (wrappedSum - (high << 16)) mod 2^32}.
 */
final class VectorRowKernel extends RowKernel {

  private static final VectorSpecies<Integer> SPECIES = IntVector.SPECIES_PREFERRED;
  private static final int STEP = SPECIES.vectorByteSize();

  /**
   * Whether the preferred shape divides a row in pairs of vectors (true for every SIMD width in
   * use).
   */
  static boolean supported() {
    return SPECIES.length() >= 4 && ROW_BYTES % (2 * STEP) == 0;
  }

  @Override
  String name() {
    return "vector-" + SPECIES.vectorBitSize();
  }

  @Override
  long rowSum(MemorySegment bytes, long rowStart) {
    return copyRowSum(bytes, rowStart, null, 0);
  }

  /** Sums the row; also stores every vector it loads into {@code dst} unless that is null. */
  @Override
  long copyRowSum(MemorySegment src, long srcStart, MemorySegment dst, long dstStart) {
    IntVector words0 = IntVector.zero(SPECIES);
    IntVector words1 = words0;
    IntVector high0 = words0;
    IntVector high1 = words0;
    for (int at = 0; at < ROW_BYTES; at += 2 * STEP) {
      IntVector a =
          IntVector.fromMemorySegment(SPECIES, src, srcStart + at, ByteOrder.LITTLE_ENDIAN);
      IntVector b =
          IntVector.fromMemorySegment(SPECIES, src, srcStart + at + STEP, ByteOrder.LITTLE_ENDIAN);
      if (dst != null) {
        a.intoMemorySegment(dst, dstStart + at, ByteOrder.LITTLE_ENDIAN);
        b.intoMemorySegment(dst, dstStart + at + STEP, ByteOrder.LITTLE_ENDIAN);
      }
      words0 = words0.add(a);
      high0 = high0.add(a.lanewise(VectorOperators.ASHR, 16));
      words1 = words1.add(b);
      high1 = high1.add(b.lanewise(VectorOperators.ASHR, 16));
    }
    return exactSum(words0.add(words1), high0.add(high1));
  }

  /**
   * The exact sum of the words added into {@code words} (wrapping) and of their high halves into
   * {@code high}: at most a row's words, so the low halves' sum lies in {@code [0, 2^26)}.
   */
  private static long exactSum(IntVector words, IntVector high) {
    int wrapped = words.reduceLanes(VectorOperators.ADD);
    int highSum = high.reduceLanes(VectorOperators.ADD);
    return ((long) highSum << 16) + Integer.toUnsignedLong(wrapped - (highSum << 16));
  }

  /**
   * As the row loop, one vector at a time, then the last words (fewer than a vector) one by one.
   */
  @Override
  long copyWordSum(MemorySegment src, long srcStart, MemorySegment dst, long dstStart, int count) {
    IntVector words = IntVector.zero(SPECIES);
    IntVector high = words;
    long end = (long) count * Integer.BYTES;
    long at = 0;
    for (; at + STEP <= end; at += STEP) {
      IntVector a =
          IntVector.fromMemorySegment(SPECIES, src, srcStart + at, ByteOrder.LITTLE_ENDIAN);
      if (dst != null) {
        a.intoMemorySegment(dst, dstStart + at, ByteOrder.LITTLE_ENDIAN);
      }
      words = words.add(a);
      high = high.add(a.lanewise(VectorOperators.ASHR, 16));
    }
    return exactSum(words, high)
        + super.copyWordSum(
            src,
            srcStart + at,
            dst,
            dst == null ? 0 : dstStart + at,
            (int) ((end - at) / Integer.BYTES));
  }
}
