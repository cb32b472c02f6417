package dev.mx.layout.gen;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The generator on the incubating Vector API: splitmix64 on the preferred long vectors, the 24-bit
 * value converted to float lanes (exact), bf16 rounding on the float bits, stored straight into
 * native memory. f16 and f64 use the scalar kernel. Loaded only when {@code jdk.incubator.vector}
 * is resolved (see {@link ChunkKernels}).
 */
final class VectorChunkKernel implements ChunkKernel {
  private static final VectorSpecies<Long> LONGS = LongVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> FLOATS =
      VectorSpecies.of(float.class, VectorShape.forBitSize(LONGS.vectorBitSize() / 2));
  private static final VectorSpecies<Short> SHORTS =
      VectorSpecies.of(short.class, VectorShape.forBitSize(LONGS.vectorBitSize() / 4));
  private static final LongVector IOTA = LongVector.zero(LONGS).addIndex(1);
  private static final ByteOrder NATIVE = ByteOrder.nativeOrder();

  /**
   * Whether the shapes this kernel needs exist on this machine (64-bit lanes of at least 128 bits).
   */
  static boolean supported() {
    return LONGS.length() >= 2;
  }

  /**
   * The values of flat indices {@code first ... first + lanes - 1}: {@code ((u >>> 40) - 2^23) ·
   * 2^-24}.
   */
  private static FloatVector values(long key, long first) {
    LongVector z =
        IOTA.add(first).lanewise(VectorOperators.XOR, key).add(WeightGenerator.GOLDEN_GAMMA);
    z =
        z.lanewise(VectorOperators.XOR, z.lanewise(VectorOperators.LSHR, 30))
            .mul(0xBF58476D1CE4E5B9L);
    z =
        z.lanewise(VectorOperators.XOR, z.lanewise(VectorOperators.LSHR, 27))
            .mul(0x94D049BB133111EBL);
    z = z.lanewise(VectorOperators.XOR, z.lanewise(VectorOperators.LSHR, 31));
    LongVector m = z.lanewise(VectorOperators.LSHR, 40).sub(8388608L);
    return ((FloatVector) m.convertShape(VectorOperators.L2F, FLOATS, 0)).mul(0x1.0p-24f);
  }

  @Override
  public void f32(MemorySegment out, long at, long key, long first, long n) {
    int lanes = LONGS.length();
    long j = 0;
    for (; j + lanes <= n; j += lanes) {
      values(key, first + j).intoMemorySegment(out, (at + j) * 4, NATIVE);
    }
    for (; j < n; j++) {
      out.setAtIndex(
          ValueLayout.JAVA_FLOAT_UNALIGNED, at + j, WeightGenerator.valueAt(key, first + j));
    }
  }

  @Override
  public void bf16(MemorySegment out, long at, long key, long first, long n) {
    int lanes = LONGS.length();
    long j = 0;
    for (; j + lanes <= n; j += lanes) {
      // Generated values are never NaN, so round to nearest even needs no NaN case.
      IntVector bits = (IntVector) values(key, first + j).viewAsIntegralLanes();
      IntVector rounded =
          bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1))
              .add(0x7fff)
              .lanewise(VectorOperators.LSHR, 16);
      ((ShortVector) rounded.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(out, (at + j) * 2, NATIVE);
    }
    for (; j < n; j++) {
      out.setAtIndex(
          ValueLayout.JAVA_SHORT_UNALIGNED,
          at + j,
          FloatBits.f32ToBf16(WeightGenerator.valueAt(key, first + j)));
    }
  }

  @Override
  public void f16(MemorySegment out, long at, long key, long first, long n) {
    SCALAR.f16(out, at, key, first, n);
  }

  @Override
  public void f64(MemorySegment out, long at, long key, long first, long n) {
    SCALAR.f64(out, at, key, first, n);
  }
}
