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
 * Contiguous casts on the incubating Vector API, straight from segment to segment: each lane is
 * decoded to its f32 bits and encoded from them with integer rounding (ties to even), so results
 * equal the scalar path's bit for bit, NaN payloads included. Subnormal targets round with one
 * float add of a power of two whose ulp is the target's smallest subnormal (the FPU's own round to
 * nearest even). Covers f32, bf16, f16, f8_e4m3fn and f8_e5m2 in any pair; f64 and strided runs
 * stay on the scalar path. Loaded only when {@code jdk.incubator.vector} is resolved (see {@link
 * CastKernels}).
 */
final class VectorCasts {
  private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Short> SHORTS =
      VectorSpecies.of(short.class, VectorShape.forBitSize(INTS.vectorBitSize() / 2));
  private static final VectorSpecies<Byte> BYTES =
      VectorSpecies.of(byte.class, VectorShape.forBitSize(INTS.vectorBitSize() / 4));
  private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;
  static final int LANES = INTS.length();

  private VectorCasts() {}

  /**
   * Whether this machine has the shapes the kernel needs: int vectors of 256 bits or more (bytes of
   * 64+).
   */
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
   * Converts the first {@code n - n % LANES} of {@code n} contiguous elements and returns how many
   * it converted; the caller finishes the tail. The pair must satisfy {@link #handles}.
   */
  static long convert(
      MemorySegment src, long so, DType from, MemorySegment dst, long d0, DType to, long n) {
    long m = n - n % LANES;
    if (m == 0) {
      return 0;
    }
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

  private static IllegalArgumentException unhandled(DType from, DType to) {
    return new IllegalArgumentException(
        "the vector cast kernel has no " + from + " -> " + to + " loop");
  }

  // One loop per pair with decode and encode written out in it, on purpose: shared helper methods
  // get
  // compiled on their own while the first pairs run, and C2 then no longer inlines them into the
  // loops of
  // later pairs (their compiled code is over InlineSmallCode), so every vector crosses a call
  // boxed. That
  // measured 2x slower for half of the pairs in one JVM; spelled out, each loop compiles whole.

  private static void f32ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector b = IntVector.fromMemorySegment(INTS, src, so + 4 * i, LE);
      // Round to nearest even: add 0x7fff plus the kept LSB; any NaN becomes the quiet NaN.
      IntVector o =
          b.add(b.lanewise(VectorOperators.LSHR, 16).and(1))
              .add(0x7fff)
              .lanewise(VectorOperators.LSHR, 16);
      o = o.blend(0x7fc0, b.and(0x7fff_ffff).compare(VectorOperators.GT, 0x7f80_0000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void f32ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector b = IntVector.fromMemorySegment(INTS, src, so + 4 * i, LE);
      IntVector a = b.and(0x7fff_ffff);
      // Normal: rebias (127 - 15), round the 13 dropped bits to nearest even; a carry moves into
      // the exponent.
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 13).and(1))
              .add(0xfff)
              .lanewise(VectorOperators.LSHR, 13);
      // Below 2^-14: adding 0.5f (ulp 2^-24, the smallest subnormal) rounds to the subnormal's
      // code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0.5f).viewAsIntegralLanes())
              .sub(0x3f00_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From halfway past the largest finite value (65520) up: infinity. NaN: quiet, top payload
      // bits kept.
      o = o.blend(0x7c00, a.compare(VectorOperators.GE, 0x477f_f000));
      IntVector nan = a.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00);
      o = o.blend(nan, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 16).and(0x8000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void f32ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector b = IntVector.fromMemorySegment(INTS, src, so + 4 * i, LE);
      IntVector a = b.and(0x7fff_ffff);
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
      // Past 464 (the tie above 448 rounds to even 448), infinity and NaN: the NaN code.
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x43e8_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void f32ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector b = IntVector.fromMemorySegment(INTS, src, so + 4 * i, LE);
      IntVector a = b.and(0x7fff_ffff);
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 21).and(1))
              .add(0xf_ffff)
              .lanewise(VectorOperators.LSHR, 21);
      // Below 2^-14: adding 2^7 (ulp 2^-16) rounds to the subnormal's code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p7f).viewAsIntegralLanes())
              .sub(0x4300_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From 61440 (the tie above 57344 rounds up) to infinity: infinity. NaN: the NaN code.
      o = o.blend(0x7c, a.compare(VectorOperators.GE, 0x4770_0000));
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void bf16ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      // S2I sign-extends; the extension shifts out.
      IntVector b =
          ((IntVector)
                  ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                      .convertShape(VectorOperators.S2I, INTS, 0))
              .lanewise(VectorOperators.LSHL, 16);
      b.intoMemorySegment(dst, d0 + 4 * i, LE);
    }
  }

  private static void bf16ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      // S2I sign-extends; the extension shifts out.
      IntVector b =
          ((IntVector)
                  ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                      .convertShape(VectorOperators.S2I, INTS, 0))
              .lanewise(VectorOperators.LSHL, 16);
      IntVector a = b.and(0x7fff_ffff);
      // Normal: rebias (127 - 15), round the 13 dropped bits to nearest even; a carry moves into
      // the exponent.
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 13).and(1))
              .add(0xfff)
              .lanewise(VectorOperators.LSHR, 13);
      // Below 2^-14: adding 0.5f (ulp 2^-24, the smallest subnormal) rounds to the subnormal's
      // code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0.5f).viewAsIntegralLanes())
              .sub(0x3f00_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From halfway past the largest finite value (65520) up: infinity. NaN: quiet, top payload
      // bits kept.
      o = o.blend(0x7c00, a.compare(VectorOperators.GE, 0x477f_f000));
      IntVector nan = a.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00);
      o = o.blend(nan, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 16).and(0x8000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void bf16ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      // S2I sign-extends; the extension shifts out.
      IntVector b =
          ((IntVector)
                  ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                      .convertShape(VectorOperators.S2I, INTS, 0))
              .lanewise(VectorOperators.LSHL, 16);
      IntVector a = b.and(0x7fff_ffff);
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
      // Past 464 (the tie above 448 rounds to even 448), infinity and NaN: the NaN code.
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x43e8_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void bf16ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      // S2I sign-extends; the extension shifts out.
      IntVector b =
          ((IntVector)
                  ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                      .convertShape(VectorOperators.S2I, INTS, 0))
              .lanewise(VectorOperators.LSHL, 16);
      IntVector a = b.and(0x7fff_ffff);
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 21).and(1))
              .add(0xf_ffff)
              .lanewise(VectorOperators.LSHR, 21);
      // Below 2^-14: adding 2^7 (ulp 2^-16) rounds to the subnormal's code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p7f).viewAsIntegralLanes())
              .sub(0x4300_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From 61440 (the tie above 57344 rounds up) to infinity: infinity. NaN: the NaN code.
      o = o.blend(0x7c, a.compare(VectorOperators.GE, 0x4770_0000));
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void f16ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector h =
          (IntVector)
              ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                  .convertShape(VectorOperators.S2I, INTS, 0);
      IntVector habs = h.lanewise(VectorOperators.LSHL, 13).and(0x0fff_e000);
      IntVector b = habs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14 (exact, no f32 subnormal involved).
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              habs.compare(VectorOperators.LT, 0x0080_0000));
      // All-ones exponent: infinity, or NaN made quiet with its payload kept (as F16C does).
      b = b.blend(habs.or(0x7f80_0000), habs.compare(VectorOperators.GE, 0x0f80_0000));
      b = b.blend(habs.or(0x7fc0_0000), habs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
      b.intoMemorySegment(dst, d0 + 4 * i, LE);
    }
  }

  private static void f16ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector h =
          (IntVector)
              ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                  .convertShape(VectorOperators.S2I, INTS, 0);
      IntVector habs = h.lanewise(VectorOperators.LSHL, 13).and(0x0fff_e000);
      IntVector b = habs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14 (exact, no f32 subnormal involved).
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              habs.compare(VectorOperators.LT, 0x0080_0000));
      // All-ones exponent: infinity, or NaN made quiet with its payload kept (as F16C does).
      b = b.blend(habs.or(0x7f80_0000), habs.compare(VectorOperators.GE, 0x0f80_0000));
      b = b.blend(habs.or(0x7fc0_0000), habs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
      // Round to nearest even: add 0x7fff plus the kept LSB; any NaN becomes the quiet NaN.
      IntVector o =
          b.add(b.lanewise(VectorOperators.LSHR, 16).and(1))
              .add(0x7fff)
              .lanewise(VectorOperators.LSHR, 16);
      o = o.blend(0x7fc0, b.and(0x7fff_ffff).compare(VectorOperators.GT, 0x7f80_0000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void f16ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector h =
          (IntVector)
              ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                  .convertShape(VectorOperators.S2I, INTS, 0);
      IntVector habs = h.lanewise(VectorOperators.LSHL, 13).and(0x0fff_e000);
      IntVector b = habs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14 (exact, no f32 subnormal involved).
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              habs.compare(VectorOperators.LT, 0x0080_0000));
      // All-ones exponent: infinity, or NaN made quiet with its payload kept (as F16C does).
      b = b.blend(habs.or(0x7f80_0000), habs.compare(VectorOperators.GE, 0x0f80_0000));
      b = b.blend(habs.or(0x7fc0_0000), habs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
      IntVector a = b.and(0x7fff_ffff);
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
      // Past 464 (the tie above 448 rounds to even 448), infinity and NaN: the NaN code.
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x43e8_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void f16ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector h =
          (IntVector)
              ShortVector.fromMemorySegment(SHORTS, src, so + 2 * i, LE)
                  .convertShape(VectorOperators.S2I, INTS, 0);
      IntVector habs = h.lanewise(VectorOperators.LSHL, 13).and(0x0fff_e000);
      IntVector b = habs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14 (exact, no f32 subnormal involved).
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              habs.compare(VectorOperators.LT, 0x0080_0000));
      // All-ones exponent: infinity, or NaN made quiet with its payload kept (as F16C does).
      b = b.blend(habs.or(0x7f80_0000), habs.compare(VectorOperators.GE, 0x0f80_0000));
      b = b.blend(habs.or(0x7fc0_0000), habs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16));
      IntVector a = b.and(0x7fff_ffff);
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 21).and(1))
              .add(0xf_ffff)
              .lanewise(VectorOperators.LSHR, 21);
      // Below 2^-14: adding 2^7 (ulp 2^-16) rounds to the subnormal's code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p7f).viewAsIntegralLanes())
              .sub(0x4300_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From 61440 (the tie above 57344 rounds up) to infinity: infinity. NaN: the NaN code.
      o = o.blend(0x7c, a.compare(VectorOperators.GE, 0x4770_0000));
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void e4m3ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
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
      // S.1111.111 is NaN (e4m3fn has no infinity).
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.EQ, 0x07f0_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      b.intoMemorySegment(dst, d0 + 4 * i, LE);
    }
  }

  private static void e4m3ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
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
      // S.1111.111 is NaN (e4m3fn has no infinity).
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.EQ, 0x07f0_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      // fp8 values are exact in bf16: no rounding; any NaN becomes the quiet NaN.
      IntVector o = b.lanewise(VectorOperators.LSHR, 16);
      o = o.blend(0x7fc0, b.and(0x7fff_ffff).compare(VectorOperators.GT, 0x7f80_0000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void e4m3ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
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
      // S.1111.111 is NaN (e4m3fn has no infinity).
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.EQ, 0x07f0_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      IntVector a = b.and(0x7fff_ffff);
      // Normal: rebias (127 - 15), round the 13 dropped bits to nearest even; a carry moves into
      // the exponent.
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 13).and(1))
              .add(0xfff)
              .lanewise(VectorOperators.LSHR, 13);
      // Below 2^-14: adding 0.5f (ulp 2^-24, the smallest subnormal) rounds to the subnormal's
      // code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0.5f).viewAsIntegralLanes())
              .sub(0x3f00_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From halfway past the largest finite value (65520) up: infinity. NaN: quiet, top payload
      // bits kept.
      o = o.blend(0x7c00, a.compare(VectorOperators.GE, 0x477f_f000));
      IntVector nan = a.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00);
      o = o.blend(nan, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 16).and(0x8000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void e4m3ToE5m2(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
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
      // S.1111.111 is NaN (e4m3fn has no infinity).
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.EQ, 0x07f0_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      IntVector a = b.and(0x7fff_ffff);
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 21).and(1))
              .add(0xf_ffff)
              .lanewise(VectorOperators.LSHR, 21);
      // Below 2^-14: adding 2^7 (ulp 2^-16) rounds to the subnormal's code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0x1.0p7f).viewAsIntegralLanes())
              .sub(0x4300_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From 61440 (the tie above 57344 rounds up) to infinity: infinity. NaN: the NaN code.
      o = o.blend(0x7c, a.compare(VectorOperators.GE, 0x4770_0000));
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }

  private static void e5m2ToF32(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
      IntVector cabs = code.lanewise(VectorOperators.LSHL, 21).and(0x0fe0_0000);
      IntVector b = cabs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14.
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              cabs.compare(VectorOperators.LT, 0x0080_0000));
      // S.11111.00 is infinity, S.11111.xx (xx != 0) NaN.
      b = b.blend(0x7f80_0000, cabs.compare(VectorOperators.EQ, 0x0f80_0000));
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      b.intoMemorySegment(dst, d0 + 4 * i, LE);
    }
  }

  private static void e5m2ToBf16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
      IntVector cabs = code.lanewise(VectorOperators.LSHL, 21).and(0x0fe0_0000);
      IntVector b = cabs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14.
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              cabs.compare(VectorOperators.LT, 0x0080_0000));
      // S.11111.00 is infinity, S.11111.xx (xx != 0) NaN.
      b = b.blend(0x7f80_0000, cabs.compare(VectorOperators.EQ, 0x0f80_0000));
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      // fp8 values are exact in bf16: no rounding; any NaN becomes the quiet NaN.
      IntVector o = b.lanewise(VectorOperators.LSHR, 16);
      o = o.blend(0x7fc0, b.and(0x7fff_ffff).compare(VectorOperators.GT, 0x7f80_0000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void e5m2ToF16(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
      IntVector cabs = code.lanewise(VectorOperators.LSHL, 21).and(0x0fe0_0000);
      IntVector b = cabs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14.
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              cabs.compare(VectorOperators.LT, 0x0080_0000));
      // S.11111.00 is infinity, S.11111.xx (xx != 0) NaN.
      b = b.blend(0x7f80_0000, cabs.compare(VectorOperators.EQ, 0x0f80_0000));
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      IntVector a = b.and(0x7fff_ffff);
      // Normal: rebias (127 - 15), round the 13 dropped bits to nearest even; a carry moves into
      // the exponent.
      IntVector o =
          a.sub(112 << 23)
              .add(a.lanewise(VectorOperators.LSHR, 13).and(1))
              .add(0xfff)
              .lanewise(VectorOperators.LSHR, 13);
      // Below 2^-14: adding 0.5f (ulp 2^-24, the smallest subnormal) rounds to the subnormal's
      // code.
      IntVector sub =
          ((IntVector) ((FloatVector) a.viewAsFloatingLanes()).add(0.5f).viewAsIntegralLanes())
              .sub(0x3f00_0000);
      o = o.blend(sub, a.compare(VectorOperators.LT, 0x3880_0000));
      // From halfway past the largest finite value (65520) up: infinity. NaN: quiet, top payload
      // bits kept.
      o = o.blend(0x7c00, a.compare(VectorOperators.GE, 0x477f_f000));
      IntVector nan = a.lanewise(VectorOperators.LSHR, 13).and(0x3ff).or(0x7e00);
      o = o.blend(nan, a.compare(VectorOperators.GT, 0x7f80_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 16).and(0x8000));
      ((ShortVector) o.convertShape(VectorOperators.I2S, SHORTS, 0))
          .intoMemorySegment(dst, d0 + 2 * i, LE);
    }
  }

  private static void e5m2ToE4m3(MemorySegment src, long so, MemorySegment dst, long d0, long m) {
    for (long i = 0; i < m; i += LANES) {
      IntVector code =
          (IntVector)
              ByteVector.fromMemorySegment(BYTES, src, so + i, LE)
                  .convertShape(VectorOperators.B2I, INTS, 0);
      IntVector cabs = code.lanewise(VectorOperators.LSHL, 21).and(0x0fe0_0000);
      IntVector b = cabs.add(112 << 23);
      // Subnormal: read as 2^-14 * (1 + m), then subtract 2^-14.
      b =
          b.blend(
              ((IntVector)
                  ((FloatVector) b.add(1 << 23).viewAsFloatingLanes())
                      .sub(0x1.0p-14f)
                      .viewAsIntegralLanes()),
              cabs.compare(VectorOperators.LT, 0x0080_0000));
      // S.11111.00 is infinity, S.11111.xx (xx != 0) NaN.
      b = b.blend(0x7f80_0000, cabs.compare(VectorOperators.EQ, 0x0f80_0000));
      b = b.blend(0x7fc0_0000, cabs.compare(VectorOperators.GT, 0x0f80_0000));
      b = b.or(code.and(0x80).lanewise(VectorOperators.LSHL, 24));
      IntVector a = b.and(0x7fff_ffff);
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
      // Past 464 (the tie above 448 rounds to even 448), infinity and NaN: the NaN code.
      o = o.blend(0x7f, a.compare(VectorOperators.GT, 0x43e8_0000));
      o = o.or(b.lanewise(VectorOperators.LSHR, 24).and(0x80));
      ((ByteVector) o.convertShape(VectorOperators.I2B, BYTES, 0))
          .intoMemorySegment(dst, d0 + i, LE);
    }
  }
}
