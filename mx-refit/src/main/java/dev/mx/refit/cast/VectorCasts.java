package dev.mx.refit.cast;

import dev.mx.api.DType;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Contiguous casts on the incubating Vector API, straight from segment to segment: each lane is decoded to
 * its f32 bits and encoded from them with integer rounding (ties to even), so results equal the scalar
 * path's bit for bit, NaN payloads included. Subnormal targets round with one float add of a power of two
 * whose ulp is the target's smallest subnormal (the FPU's own round to nearest even). Covers f32, bf16,
 * f16, f8_e4m3fn and f8_e5m2 in any pair; f64 and strided runs stay on the scalar path. Loaded only when
 * {@code jdk.incubator.vector} is resolved (see {@link CastKernels}).
 */
final class VectorCasts {
  private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Float> FLOATS =
      VectorSpecies.of(float.class, VectorShape.forBitSize(INTS.vectorBitSize()));
  private static final VectorSpecies<Short> SHORTS =
      VectorSpecies.of(short.class, VectorShape.forBitSize(INTS.vectorBitSize() / 2));
  private static final VectorSpecies<Byte> BYTES =
      VectorSpecies.of(byte.class, VectorShape.forBitSize(INTS.vectorBitSize() / 4));
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  static final int LANES = INTS.length();

  private VectorCasts() {}

  /** Whether this machine has the shapes the kernel needs: int vectors of 256 bits or more (bytes of 64+). */
  static boolean supported() {
    return INTS.vectorBitSize() >= 256;
  }

  /** Whether the kernel converts {@code from} to {@code to} (distinct types, neither f64). */
  static boolean handles(DType from, DType to) {
    return from != to && lanesType(from) && lanesType(to);
  }

  private static boolean lanesType(DType t) {
    return switch (t) {
      case F32, BF16, F16, F8_E4M3FN, F8_E5M2 -> true;
      default -> false;
    };
  }

  /**
   * Converts the first {@code n - n % LANES} of {@code n} contiguous elements and returns how many it
   * converted; the caller finishes the tail. The pair must satisfy {@link #handles}.
   */
  static long convert(MemorySegment src, long so, DType from, MemorySegment dst, long d0, DType to, long n) {
    long m = n - n % LANES;
    if (m == 0) {
      return 0;
    }
    // One small method per pair: each compiles on its own with every vector op inlined, whatever other
    // pairs ran before (one method holding all loops lost its inlining and ran 4x slower).
    switch (from) {
      case F32 -> {
        switch (to) {
          case BF16 -> f32ToBf16(src, so, dst, d0, m);
          case F16 -> f32ToF16(src, so, dst, d0, m);
          case F8_E4M3FN -> f32ToE4m3(src, so, dst, d0, m);
          case F8_E5M2 -> f32ToE5m2(src, so, dst, d0, m);
          default -> throw unhandled(from, to);
        }
      }
      case BF16 -> {
        switch (to) {
          case F32 -> bf16ToF32(src, so, dst, d0, m);
          case F16 -> bf16ToF16(src, so, dst, d0, m);
          case F8_E4M3FN -> bf16ToE4m3(src, so, dst, d0, m);
          case F8_E5M2 -> bf16ToE5m2(src, so, dst, d0, m);
          default -> throw unhandled(from, to);
        }
      }
      case F16 -> {
        switch (to) {
          case F32 -> f16ToF32(src, so, dst, d0, m);
          case BF16 -> f16ToBf16(src, so, dst, d0, m);
          case F8_E4M3FN -> f16ToE4m3(src, so, dst, d0, m);
          case F8_E5M2 -> f16ToE5m2(src, so, dst, d0, m);
          default -> throw unhandled(from, to);
        }
      }
      case F8_E4M3FN -> {
        switch (to) {
          case F32 -> e4m3ToF32(src, so, dst, d0, m);
          case BF16 -> e4m3ToBf16(src, so, dst, d0, m);
          case F16 -> e4m3ToF16(src, so, dst, d0, m);
          case F8_E5M2 -> e4m3ToE5m2(src, so, dst, d0, m);
          default -> throw unhandled(from, to);
        }
      }
      case F8_E5M2 -> {
        switch (to) {
          case F32 -> e5m2ToF32(src, so, dst, d0, m);
          case BF16 -> e5m2ToBf16(src, so, dst, d0, m);
          case F16 -> e5m2ToF16(src, so, dst, d0, m);
          case F8_E4M3FN -> e5m2ToE4m3(src, so, dst, d0, m);
          default -> throw unhandled(from, to);
        }
      }
      default -> throw unhandled(from, to);
    }
    return m;
  }

  private static void f32ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toBf16(fromF32(src, so + 4 * i), dst, d0 + 2 * i);
    }
  }

  private static void f32ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF16(fromF32(src, so + 4 * i), dst, d0 + 2 * i);
    }
  }

  private static void f32ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE4m3(fromF32(src, so + 4 * i), dst, d0 + i);
    }
  }

  private static void f32ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE5m2(fromF32(src, so + 4 * i), dst, d0 + i);
    }
  }

  private static void bf16ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF32(fromBf16(src, so + 2 * i), dst, d0 + 4 * i);
    }
  }

  private static void bf16ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF16(fromBf16(src, so + 2 * i), dst, d0 + 2 * i);
    }
  }

  private static void bf16ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE4m3(fromBf16(src, so + 2 * i), dst, d0 + i);
    }
  }

  private static void bf16ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE5m2(fromBf16(src, so + 2 * i), dst, d0 + i);
    }
  }

  private static void f16ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF32(fromF16(src, so + 2 * i), dst, d0 + 4 * i);
    }
  }

  private static void f16ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toBf16(fromF16(src, so + 2 * i), dst, d0 + 2 * i);
    }
  }

  private static void f16ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE4m3(fromF16(src, so + 2 * i), dst, d0 + i);
    }
  }

  private static void f16ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE5m2(fromF16(src, so + 2 * i), dst, d0 + i);
    }
  }

  private static void e4m3ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF32(fromE4m3(src, so + i), dst, d0 + 4 * i);
    }
  }

  private static void e4m3ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toBf16(fromE4m3(src, so + i), dst, d0 + 2 * i);
    }
  }

  private static void e4m3ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF16(fromE4m3(src, so + i), dst, d0 + 2 * i);
    }
  }

  private static void e4m3ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE5m2(fromE4m3(src, so + i), dst, d0 + i);
    }
  }

  private static void e5m2ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF32(fromE5m2(src, so + i), dst, d0 + 4 * i);
    }
  }

  private static void e5m2ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toBf16(fromE5m2(src, so + i), dst, d0 + 2 * i);
    }
  }

  private static void e5m2ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toF16(fromE5m2(src, so + i), dst, d0 + 2 * i);
    }
  }

  private static void e5m2ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      toE4m3(fromE5m2(src, so + i), dst, d0 + i);
    }
  }

  private static IllegalArgumentException unhandled(DType from, DType to) {
    return new IllegalArgumentException("the vector cast kernel has no " + from + " -> " + to + " loop");
  }

  // ---- decoders: LANES elements at a byte offset to their f32 bits ----

  private static IntVector fromF32(MemorySegment s, long off) {
    return IntVector.fromMemorySegment(INTS, s, off, LE);
  }

  private static IntVector fromBf16(MemorySegment s, long off) {
    // The sign extension of S2I shifts out.
    return ((IntVector) ShortVector.fromMemorySegment(SHORTS, s, off, LE).convertShape(VectorOperators.S2I, INTS, 0))
        .lanewise(VectorOperators.LSHL, 16);
  }

  private static IntVector fromF16(MemorySegment s, long off) {
    IntVector h = (IntVector) ShortVector.fromMemorySegment(SHORTS, s, off, LE).convertShape(VectorOperators.S2I, INTS, 0);
    IntVector abs = h.lanewise(VectorOperators.LSHL, 13).and(0x0fff_e000);
    IntVector r = decodeMagnitude(abs, 112, 0x1.0p-14f);
    // All-ones exponent: infinity, or NaN made quiet with its payload kept (as F16C does).
    r = r.blend(abs.or(0x7f80_0000), abs.compare(VectorOperators.GE, 0x0f80_0000));
    r = r.blend(abs.or(0x7fc0_0000), abs.compare(VectorOperators.GT, 0x0f80_0000));
    return r.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
  }

  private static IntVector fromE4m3(MemorySegment s, long off) {
    IntVector code = bytesAsInts(s, off);
    IntVector abs = code.lanewise(VectorOperators.LSHL, 20).and(0x07f0_0000);
    IntVector r = decodeMagnitude(abs, 120, 0x1.0p-6f);
    // S.1111.111 is NaN (no infinity in e4m3fn).
    r = r.blend(0x7fc0_0000, abs.compare(VectorOperators.EQ, 0x07f0_0000));
    return r.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
  }

  private static IntVector fromE5m2(MemorySegment s, long off) {
    IntVector code = bytesAsInts(s, off);
    IntVector abs = code.lanewise(VectorOperators.LSHL, 21).and(0x0fe0_0000);
    IntVector r = decodeMagnitude(abs, 112, 0x1.0p-14f);
    // S.11111.00 is infinity, S.11111.xx (xx != 0) NaN.
    r = r.blend(0x7f80_0000, abs.compare(VectorOperators.EQ, 0x0f80_0000));
    r = r.blend(0x7fc0_0000, abs.compare(VectorOperators.GT, 0x0f80_0000));
    return r.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
  }

  /**
   * The f32 bits of a finite small-float magnitude already shifted into the f32 fields ({@code abs}): the
   * exponent rebiased by {@code rebias}; a subnormal (exponent field 0) is first read as
   * {@code minNormal · (1 + m)} and {@code minNormal} subtracted, exact in f32 and free of f32 subnormals
   * (which cost a microcode assist on some CPUs).
   */
  private static IntVector decodeMagnitude(IntVector abs, int rebias, float minNormal) {
    IntVector r = abs.add(rebias << 23);
    IntVector sub = floatBits(asFloats(r.add(1 << 23)).sub(minNormal));
    return r.blend(sub, abs.compare(VectorOperators.LT, 0x0080_0000));
  }

  private static IntVector bytesAsInts(MemorySegment s, long off) {
    return (IntVector) ByteVector.fromMemorySegment(BYTES, s, off, LE).convertShape(VectorOperators.B2I, INTS, 0);
  }

  private static IntVector floatBits(FloatVector v) {
    return (IntVector) v.viewAsIntegralLanes();
  }

  private static FloatVector asFloats(IntVector v) {
    return (FloatVector) v.viewAsFloatingLanes();
  }

  // ---- encoders: f32 bits to LANES elements at a byte offset ----

  private static void toF32(IntVector bits, MemorySegment d, long off) {
    bits.intoMemorySegment(d, off, LE);
  }

  private static void toBf16(IntVector bits, MemorySegment d, long off) {
    IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7fff)
        .lanewise(VectorOperators.LSHR, 16);
    rounded = rounded.blend(0x7fc0, bits.and(0x7fff_ffff).compare(VectorOperators.GT, 0x7f80_0000));
    storeShorts(rounded, d, off);
  }

  private static void toF16(IntVector bits, MemorySegment d, long off) {
    IntVector abs = bits.and(0x7fff_ffff);
    // Normal: rebias (127 - 15), round the 13 dropped bits to nearest even; a carry moves into the exponent.
    IntVector r = abs.sub(112 << 23).add(abs.lanewise(VectorOperators.LSHR, 13).and(1)).add(0xfff)
        .lanewise(VectorOperators.LSHR, 13);
    // Below 2^-14: adding 0.5f (ulp 2^-24, the smallest f16 subnormal) rounds to the subnormal's code.
    IntVector sub = floatBits(asFloats(abs).add(0.5f)).sub(0x3f00_0000);
    r = r.blend(sub, abs.compare(VectorOperators.LT, 0x3880_0000));
    // From halfway past the largest finite value (65520) up: infinity. NaN: quiet, top payload bits kept.
    r = r.blend(0x7c00, abs.compare(VectorOperators.GE, 0x477f_f000));
    r = r.blend(abs.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00),
        abs.compare(VectorOperators.GT, 0x7f80_0000));
    storeShorts(r.or(bits.lanewise(VectorOperators.LSHR, 16).and(0x8000)), d, off);
  }

  private static void toE4m3(IntVector bits, MemorySegment d, long off) {
    IntVector abs = bits.and(0x7fff_ffff);
    IntVector r = abs.sub(120 << 23).add(abs.lanewise(VectorOperators.LSHR, 20).and(1)).add(0x7_ffff)
        .lanewise(VectorOperators.LSHR, 20);
    // Below 2^-6: adding 2^14 (ulp 2^-9) rounds to the subnormal's code.
    IntVector sub = floatBits(asFloats(abs).add(0x1.0p14f)).sub(0x4680_0000);
    r = r.blend(sub, abs.compare(VectorOperators.LT, 0x3c80_0000));
    // Past halfway above 448 (464 rounds to even 448), infinity and NaN: the NaN code, no infinity.
    r = r.blend(0x7f, abs.compare(VectorOperators.GT, 0x43e8_0000));
    storeBytes(r.or(bits.lanewise(VectorOperators.LSHR, 24).and(0x80)), d, off);
  }

  private static void toE5m2(IntVector bits, MemorySegment d, long off) {
    IntVector abs = bits.and(0x7fff_ffff);
    IntVector r = abs.sub(112 << 23).add(abs.lanewise(VectorOperators.LSHR, 21).and(1)).add(0xf_ffff)
        .lanewise(VectorOperators.LSHR, 21);
    // Below 2^-14: adding 2^7 (ulp 2^-16) rounds to the subnormal's code.
    IntVector sub = floatBits(asFloats(abs).add(0x1.0p7f)).sub(0x4300_0000);
    r = r.blend(sub, abs.compare(VectorOperators.LT, 0x3880_0000));
    // From halfway past 57344 (61440, a tie that rounds up) to infinity: infinity. NaN: the NaN code.
    r = r.blend(0x7c, abs.compare(VectorOperators.GE, 0x4770_0000));
    r = r.blend(0x7f, abs.compare(VectorOperators.GT, 0x7f80_0000));
    storeBytes(r.or(bits.lanewise(VectorOperators.LSHR, 24).and(0x80)), d, off);
  }

  private static void storeShorts(IntVector v, MemorySegment d, long off) {
    ((ShortVector) v.convertShape(VectorOperators.I2S, SHORTS, 0)).intoMemorySegment(d, off, LE);
  }

  private static void storeBytes(IntVector v, MemorySegment d, long off) {
    ((ByteVector) v.convertShape(VectorOperators.I2B, BYTES, 0)).intoMemorySegment(d, off, LE);
  }
}
