package dev.mx.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A test tensor whose every element has a recomputable value: {@code value(i)} of row-major flat
 * index {@code i}, small enough to be exact in every supported dtype, distinct per tensor through a
 * salt.
 */
record GlobalTensor(String name, Shape shape, DType dtype, long salt) {

  static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED;
  static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
  static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;
  static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
  static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

  /**
   * The value of flat element {@code i}: 1..120 for bytes, 1..30000 otherwise (never 0, the fill).
   */
  long value(long i) {
    long h = (i + 1) * 0x9E3779B97F4A7C15L ^ salt;
    h ^= h >>> 29;
    long range = dtype.elementSize() == 1 ? 120 : 30000;
    return 1 + Math.floorMod(h, range);
  }

  int elsize() {
    return dtype.elementSize();
  }

  /**
   * Writes the box {@code [offset, offset + box)} as a contiguous row-major buffer into {@code
   * out}.
   */
  void writeBox(long[] offset, long[] box, MemorySegment out) {
    long[] strides = shape.rowMajorStrides();
    long n = Shape.of(box).numel();
    long[] idx = new long[box.length];
    for (long k = 0; k < n; k++) {
      long flat = 0;
      for (int d = 0; d < box.length; d++) {
        flat += (offset[d] + idx[d]) * strides[d];
      }
      write(out, k * elsize(), dtype, value(flat));
      for (int d = box.length - 1; d >= 0; d--) {
        if (++idx[d] < box[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
  }

  static void write(MemorySegment seg, long byteOffset, DType t, long v) {
    switch (t) {
      case U8, I8, BOOL -> seg.set(ValueLayout.JAVA_BYTE, byteOffset, (byte) v);
      case I16 -> seg.set(I16, byteOffset, (short) v);
      case I32 -> seg.set(I32, byteOffset, (int) v);
      case I64 -> seg.set(I64, byteOffset, v);
      case F32 -> seg.set(F32, byteOffset, (float) v);
      case F64 -> seg.set(F64, byteOffset, (double) v);
      default -> throw new IllegalArgumentException("test tensors do not use " + t);
    }
  }

  static long read(MemorySegment seg, long byteOffset, DType t) {
    return switch (t) {
      case U8, I8, BOOL -> seg.get(ValueLayout.JAVA_BYTE, byteOffset) & 0xff;
      case I16 -> seg.get(I16, byteOffset);
      case I32 -> seg.get(I32, byteOffset);
      case I64 -> seg.get(I64, byteOffset);
      case F32 -> (long) seg.get(F32, byteOffset);
      case F64 -> (long) seg.get(F64, byteOffset);
      default -> throw new IllegalArgumentException("test tensors do not use " + t);
    };
  }
}
