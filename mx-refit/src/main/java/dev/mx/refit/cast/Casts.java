package dev.mx.refit.cast;

import dev.mx.api.DType;
import dev.mx.api.HalfFloats;
import dev.mx.api.annotation.Internal;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Converts runs of elements between floating-point types, bit-exact with PyTorch's CPU {@code
 * copy_}: round to nearest even, NaN stays NaN, overflow to f16/bf16/e5m2 gives infinity, overflow
 * to e4m3fn gives NaN, subnormals are kept.
 *
 * <p>Every conversion goes through f32, exactly as PyTorch's element constructors do: widening to
 * f32 is exact for every narrower type, and f64 is first rounded to f32 (so f64 to a narrow type
 * rounds twice, like {@code torch.tensor(x, dtype=float64).to(bfloat16)}). Same-type "casts" are
 * byte copies.
 *
 * <p>Contiguous runs between f32, bf16, f16 and the fp8 types run on the Vector API kernel ({@link
 * VectorCasts}) when {@code jdk.incubator.vector} is resolved. Everything else (f64, strided runs,
 * the tail of a run, JVMs without the module) is processed in chunks through small per-thread
 * arrays: bulk loads into the array, a branch-light loop, bulk stores. Nothing is allocated per
 * element or per run. The 16-bit rounding is mx-api's {@link HalfFloats}, the one the weight
 * generator uses too.
 */
@Internal
public final class Casts {
  private static final int CHUNK = 2048;
  private static final ValueLayout.OfShort I16 =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt I32 =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfDouble F64 =
      ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfByte I8 = ValueLayout.JAVA_BYTE;

  /**
   * Runs of at least one vector step go through the four-stream copy (64 B runs: 0.73 vs 0.52 of a
   * copy).
   */
  private static final long MIN_STREAM_RUN = 64;

  /** A single run at least this long is copied as four quarter streams. */
  private static final long MIN_SPLIT_RUN = 256L << 10;

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

  private Casts() {}

  /** Per-thread staging arrays for one chunk. */
  private static final class Scratch {
    /** f32 values as raw bits: the hub every conversion passes through. */
    final int[] bits = new int[CHUNK];

    final double[] f64 = new double[CHUNK];
    final short[] i16 = new short[CHUNK];
    final byte[] i8 = new byte[CHUNK];
  }

  /**
   * Whether {@code from} can be converted to {@code to}: any two floating-point types, or equal
   * types.
   */
  public static boolean supports(DType from, DType to) {
    return from == to || (from.isFloatingPoint() && to.isFloatingPoint());
  }

  /**
   * Converts {@code count} elements of type {@code from} starting at byte {@code srcOffset} of
   * {@code src} (consecutive elements {@code srcStride} bytes apart) into type {@code to} at byte
   * {@code dstOffset} of {@code dst} ({@code dstStride} bytes apart). Contiguous runs pass the
   * element sizes as strides.
   *
   * @throws IllegalArgumentException when the pair is not supported
   * @throws IndexOutOfBoundsException when a run leaves its segment (checked before anything is
   *     written for the run's extent)
   */
  public static void convert(
      MemorySegment src,
      long srcOffset,
      long srcStride,
      DType from,
      MemorySegment dst,
      long dstOffset,
      long dstStride,
      DType to,
      long count) {
    if (count <= 0) {
      return;
    }
    if (!supports(from, to)) {
      throw new IllegalArgumentException(
          "no conversion from "
              + from
              + " to "
              + to
              + " (conversions exist between f64, f32, bf16, f16, f8_e4m3fn and f8_e5m2)");
    }
    checkRun(src, srcOffset, srcStride, from, count, "source");
    checkRun(dst, dstOffset, dstStride, to, count, "destination");
    convertRun(src, srcOffset, srcStride, from, dst, dstOffset, dstStride, to, count);
  }

  /**
   * As {@link #convert(MemorySegment, long, long, DType, MemorySegment, long, long, DType, long)}
   * for callers that validated the pair and the extents up front (e.g. a compiled re-slice): skips
   * those checks. Memory safety still holds, since every access is bounds-checked by {@link
   * MemorySegment}.
   */
  public static void convertRun(
      MemorySegment src,
      long srcOffset,
      long srcStride,
      DType from,
      MemorySegment dst,
      long dstOffset,
      long dstStride,
      DType to,
      long count) {
    if (from == to && srcStride == from.elementSize() && dstStride == to.elementSize()) {
      MemorySegment.copy(src, srcOffset, dst, dstOffset, count * from.elementSize());
      return;
    }
    if (CastKernels.VECTOR
        && srcStride == from.elementSize()
        && dstStride == to.elementSize()
        && VectorCasts.handles(from, to)) {
      long done = VectorCasts.convert(src, srcOffset, from, dst, dstOffset, to, count);
      if (done == count) {
        return;
      }
      srcOffset += done * srcStride;
      dstOffset += done * dstStride;
      count -= done;
    }
    convertChunks(src, srcOffset, srcStride, from, dst, dstOffset, dstStride, to, count);
  }

  /**
   * Copies {@code runs} byte runs of {@code runBytes} each: run {@code r} from {@code srcOffset + r
   * * srcRunStride} of {@code src} to {@code dstOffset + r * dstRunStride} of {@code dst} (a
   * same-type re-slice: the cast that is a copy). With the Vector API kernel, native segments that
   * do not overlap are copied four runs at a time (a long single run as four quarters), which keeps
   * more memory traffic in flight than one {@link MemorySegment#copy} per run; otherwise one bulk
   * copy per run. Bounds are checked on every access by {@link MemorySegment}.
   */
  public static void copyRuns(
      MemorySegment src,
      long srcOffset,
      long srcRunStride,
      MemorySegment dst,
      long dstOffset,
      long dstRunStride,
      long runBytes,
      long runs) {
    if (runs <= 0 || runBytes <= 0) {
      return;
    }
    if (CastKernels.VECTOR
        && runBytes >= MIN_STREAM_RUN
        && (runs >= 4 || runBytes >= MIN_SPLIT_RUN)
        && disjointNative(src, dst)) {
      if (runs >= 4) {
        VectorCopy.copyRuns(
            src, srcOffset, srcRunStride, dst, dstOffset, dstRunStride, runBytes, runs);
        return;
      }
      long quarter = (runBytes / 4) & -VectorCopy.STEP;
      for (long r = 0; r < runs; r++) {
        long so = srcOffset + r * srcRunStride;
        long d0 = dstOffset + r * dstRunStride;
        VectorCopy.copyRuns(src, so, quarter, dst, d0, quarter, quarter, 4);
        MemorySegment.copy(src, so + 4 * quarter, dst, d0 + 4 * quarter, runBytes - 4 * quarter);
      }
      return;
    }
    for (long r = 0; r < runs; r++) {
      MemorySegment.copy(
          src, srcOffset + r * srcRunStride, dst, dstOffset + r * dstRunStride, runBytes);
    }
  }

  /**
   * Whether both segments are native and their address ranges do not meet (so copy order cannot
   * matter).
   */
  private static boolean disjointNative(MemorySegment a, MemorySegment b) {
    if (!a.isNative() || !b.isNative()) {
      return false;
    }
    long a0 = a.address();
    long b0 = b.address();
    return a0 + a.byteSize() <= b0 || b0 + b.byteSize() <= a0;
  }

  /**
   * Whether contiguous casts run on the Vector API kernel; {@link #vectorUnavailabilityCause()}
   * says why not.
   */
  public static boolean vectorized() {
    return CastKernels.VECTOR;
  }

  /** Why contiguous casts do not use the Vector API kernel, or null when they do. */
  public static Throwable vectorUnavailabilityCause() {
    return CastKernels.vectorUnavailabilityCause();
  }

  /**
   * {@link #convertRun} on the scalar kernel only: the reference the vector kernel is tested
   * against.
   */
  static void convertRunScalar(
      MemorySegment src,
      long srcOffset,
      long srcStride,
      DType from,
      MemorySegment dst,
      long dstOffset,
      long dstStride,
      DType to,
      long count) {
    if (from == to && srcStride == from.elementSize() && dstStride == to.elementSize()) {
      MemorySegment.copy(src, srcOffset, dst, dstOffset, count * from.elementSize());
      return;
    }
    convertChunks(src, srcOffset, srcStride, from, dst, dstOffset, dstStride, to, count);
  }

  /** The scalar kernel: chunks through per-thread arrays, any strides, any pair. */
  private static void convertChunks(
      MemorySegment src,
      long srcOffset,
      long srcStride,
      DType from,
      MemorySegment dst,
      long dstOffset,
      long dstStride,
      DType to,
      long count) {
    Scratch s = SCRATCH.get();
    long done = 0;
    while (done < count) {
      int n = (int) Math.min(CHUNK, count - done);
      long so = srcOffset + done * srcStride;
      long d0 = dstOffset + done * dstStride;
      if (from == to) {
        copySameType(src, so, srcStride, dst, d0, dstStride, from.elementSize(), n);
      } else {
        if (from == DType.F64) {
          loadF64(src, so, srcStride, s.f64, n);
          narrow(s.f64, s.bits, n);
        } else {
          decodeToF32(from, src, so, srcStride, s, n);
        }
        if (to == DType.F64) {
          widen(s.bits, s.f64, n);
          storeF64(s.f64, n, dst, d0, dstStride);
        } else {
          encodeFromF32(to, s, n, dst, d0, dstStride);
        }
      }
      done += n;
    }
  }

  /**
   * Contiguous convenience form of {@link #convert(MemorySegment, long, long, DType, MemorySegment,
   * long, long, DType, long)}.
   */
  public static void convert(
      MemorySegment src,
      long srcOffset,
      DType from,
      MemorySegment dst,
      long dstOffset,
      DType to,
      long count) {
    convert(src, srcOffset, from.elementSize(), from, dst, dstOffset, to.elementSize(), to, count);
  }

  private static void checkRun(
      MemorySegment seg, long offset, long stride, DType type, long count, String what) {
    long first = offset;
    long last = offset + (count - 1) * stride;
    long lo = Math.min(first, last);
    long hi = Math.max(first, last) + type.elementSize();
    if (lo < 0 || hi > seg.byteSize()) {
      throw new IndexOutOfBoundsException(
          what
              + " run of "
              + count
              + " "
              + type
              + " element(s) at byte "
              + offset
              + " stride "
              + stride
              + " spans bytes ["
              + lo
              + ", "
              + hi
              + ") outside a segment of "
              + seg.byteSize()
              + " bytes");
    }
  }

  // ---- scalar conversions (also the reference for tests) ----

  /** f32 to bf16 bits, round to nearest even; NaN becomes 0x7FC0 (PyTorch 2.x). */
  public static short f32ToBf16(float value) {
    return HalfFloats.f32ToBf16(value);
  }

  /** bf16 bits to f32 (exact). */
  public static float bf16ToF32(short bits) {
    return HalfFloats.bf16ToF32(bits);
  }

  /** f32 to IEEE binary16 bits, round to nearest even, overflow to infinity, subnormals kept. */
  public static short f32ToF16(float value) {
    return HalfFloats.f32ToF16(value);
  }

  /** IEEE binary16 bits to f32 (exact). */
  public static float f16ToF32(short bits) {
    return HalfFloats.f16ToF32(bits);
  }

  /** The fp8 format of a dtype, or null when it is not an fp8 type. */
  public static MiniFloat fp8(DType type) {
    return switch (type) {
      case F8_E4M3FN -> MiniFloat.E4M3FN;
      case F8_E5M2 -> MiniFloat.E5M2;
      default -> null;
    };
  }

  /**
   * Converts one element given as raw little-endian bits (low bits used) and returns the raw result
   * bits.
   */
  public static long convertBits(long bits, DType from, DType to) {
    if (!supports(from, to)) {
      throw new IllegalArgumentException("no conversion from " + from + " to " + to);
    }
    if (from == to) {
      return bits;
    }
    if (from == DType.F64) {
      double d = Double.longBitsToDouble(bits);
      return to == DType.F32
          ? Float.floatToRawIntBits((float) d) & 0xFFFF_FFFFL
          : fromF32((float) d, to);
    }
    float f = toF32(bits, from);
    return to == DType.F64 ? Double.doubleToRawLongBits(f) : fromF32(f, to);
  }

  private static float toF32(long bits, DType from) {
    return switch (from) {
      case F32 -> Float.intBitsToFloat((int) bits);
      case BF16 -> bf16ToF32((short) bits);
      case F16 -> f16ToF32((short) bits);
      case F8_E4M3FN, F8_E5M2 -> fp8(from).toFloat((int) bits);
      default -> throw new IllegalArgumentException("not a floating-point type: " + from);
    };
  }

  private static long fromF32(float f, DType to) {
    return switch (to) {
      case F32 -> Float.floatToRawIntBits(f) & 0xFFFF_FFFFL;
      case BF16 -> f32ToBf16(f) & 0xFFFF;
      case F16 -> f32ToF16(f) & 0xFFFF;
      case F8_E4M3FN, F8_E5M2 -> fp8(to).fromFloat(f);
      default -> throw new IllegalArgumentException("not a floating-point type: " + to);
    };
  }

  // ---- chunk kernels ----

  private static void copySameType(
      MemorySegment src,
      long so,
      long srcStride,
      MemorySegment dst,
      long d0,
      long dstStride,
      int size,
      int n) {
    switch (size) {
      case 1 -> {
        for (int i = 0; i < n; i++) {
          dst.set(I8, d0 + i * dstStride, src.get(I8, so + i * srcStride));
        }
      }
      case 2 -> {
        for (int i = 0; i < n; i++) {
          dst.set(I16, d0 + i * dstStride, src.get(I16, so + i * srcStride));
        }
      }
      case 4 -> {
        for (int i = 0; i < n; i++) {
          dst.set(I32, d0 + i * dstStride, src.get(I32, so + i * srcStride));
        }
      }
      default -> {
        for (int i = 0; i < n; i++) {
          dst.set(F64, d0 + i * dstStride, src.get(F64, so + i * srcStride));
        }
      }
    }
  }

  private static void decodeToF32(
      DType from, MemorySegment src, long so, long stride, Scratch s, int n) {
    int[] out = s.bits;
    switch (from) {
      case F32 -> loadI32(src, so, stride, out, n);
      case BF16 -> {
        loadI16(src, so, stride, s.i16, n);
        short[] in = s.i16;
        for (int i = 0; i < n; i++) {
          out[i] = in[i] << 16; // the sign-extended high bits shift out
        }
      }
      case F16 -> {
        loadI16(src, so, stride, s.i16, n);
        short[] in = s.i16;
        for (int i = 0; i < n; i++) {
          out[i] = Float.floatToRawIntBits(Float.float16ToFloat(in[i]));
        }
      }
      case F8_E4M3FN, F8_E5M2 -> {
        loadI8(src, so, stride, s.i8, n);
        MiniFloat fmt = fp8(from);
        byte[] in = s.i8;
        for (int i = 0; i < n; i++) {
          out[i] = fmt.toFloatBits(in[i]);
        }
      }
      default -> throw new IllegalArgumentException("not a floating-point type: " + from);
    }
  }

  private static void encodeFromF32(
      DType to, Scratch s, int n, MemorySegment dst, long d0, long stride) {
    int[] in = s.bits;
    switch (to) {
      case F32 -> storeI32(in, n, dst, d0, stride);
      case BF16 -> {
        short[] out = s.i16;
        for (int i = 0; i < n; i++) {
          out[i] = HalfFloats.f32BitsToBf16(in[i]);
        }
        storeI16(out, n, dst, d0, stride);
      }
      case F16 -> {
        short[] out = s.i16;
        for (int i = 0; i < n; i++) {
          out[i] = Float.floatToFloat16(Float.intBitsToFloat(in[i]));
        }
        storeI16(out, n, dst, d0, stride);
      }
      case F8_E4M3FN, F8_E5M2 -> {
        MiniFloat fmt = fp8(to);
        byte[] out = s.i8;
        for (int i = 0; i < n; i++) {
          out[i] = fmt.fromFloatBits(in[i]);
        }
        storeI8(out, n, dst, d0, stride);
      }
      default -> throw new IllegalArgumentException("not a floating-point type: " + to);
    }
  }

  private static void narrow(double[] in, int[] out, int n) {
    for (int i = 0; i < n; i++) {
      out[i] = Float.floatToRawIntBits((float) in[i]);
    }
  }

  private static void widen(int[] in, double[] out, int n) {
    for (int i = 0; i < n; i++) {
      out[i] = Float.intBitsToFloat(in[i]);
    }
  }

  private static void loadI32(MemorySegment src, long off, long stride, int[] a, int n) {
    if (stride == 4) {
      MemorySegment.copy(src, I32, off, a, 0, n);
    } else {
      for (int i = 0; i < n; i++) {
        a[i] = src.get(I32, off + i * stride);
      }
    }
  }

  private static void loadF64(MemorySegment src, long off, long stride, double[] a, int n) {
    if (stride == 8) {
      MemorySegment.copy(src, F64, off, a, 0, n);
    } else {
      for (int i = 0; i < n; i++) {
        a[i] = src.get(F64, off + i * stride);
      }
    }
  }

  private static void loadI16(MemorySegment src, long off, long stride, short[] a, int n) {
    if (stride == 2) {
      MemorySegment.copy(src, I16, off, a, 0, n);
    } else {
      for (int i = 0; i < n; i++) {
        a[i] = src.get(I16, off + i * stride);
      }
    }
  }

  private static void loadI8(MemorySegment src, long off, long stride, byte[] a, int n) {
    if (stride == 1) {
      MemorySegment.copy(src, I8, off, a, 0, n);
    } else {
      for (int i = 0; i < n; i++) {
        a[i] = src.get(I8, off + i * stride);
      }
    }
  }

  private static void storeI32(int[] a, int n, MemorySegment dst, long off, long stride) {
    if (stride == 4) {
      MemorySegment.copy(a, 0, dst, I32, off, n);
    } else {
      for (int i = 0; i < n; i++) {
        dst.set(I32, off + i * stride, a[i]);
      }
    }
  }

  private static void storeF64(double[] a, int n, MemorySegment dst, long off, long stride) {
    if (stride == 8) {
      MemorySegment.copy(a, 0, dst, F64, off, n);
    } else {
      for (int i = 0; i < n; i++) {
        dst.set(F64, off + i * stride, a[i]);
      }
    }
  }

  private static void storeI16(short[] a, int n, MemorySegment dst, long off, long stride) {
    if (stride == 2) {
      MemorySegment.copy(a, 0, dst, I16, off, n);
    } else {
      for (int i = 0; i < n; i++) {
        dst.set(I16, off + i * stride, a[i]);
      }
    }
  }

  private static void storeI8(byte[] a, int n, MemorySegment dst, long off, long stride) {
    if (stride == 1) {
      MemorySegment.copy(a, 0, dst, I8, off, n);
    } else {
      for (int i = 0; i < n; i++) {
        dst.set(I8, off + i * stride, a[i]);
      }
    }
  }
}
