package dev.mx.digest;

import java.lang.foreign.MemorySegment;

/**
 * The row kernel without the Vector API: a plain loop that C2 turns into SIMD code by itself (it
 * has the shape of the plain int32 sum the digest is measured against).
 */
final class ScalarRowKernel extends RowKernel {

  static final ScalarRowKernel INSTANCE = new ScalarRowKernel();

  private ScalarRowKernel() {}

  @Override
  String name() {
    return "scalar";
  }

  @Override
  long rowSum(MemorySegment bytes, long rowStart) {
    long rowSum = 0;
    for (long at = rowStart, end = rowStart + ROW_BYTES; at < end; at += Integer.BYTES) {
      rowSum += bytes.get(WORD, at);
    }
    return rowSum;
  }

  @Override
  long copyRowSum(MemorySegment src, long srcStart, MemorySegment dst, long dstStart) {
    long rowSum = 0;
    for (int at = 0; at < ROW_BYTES; at += Integer.BYTES) {
      int word = src.get(WORD, srcStart + at);
      dst.set(WORD, dstStart + at, word);
      rowSum += word;
    }
    return rowSum;
  }
}
