package dev.mx.digest;

import java.lang.foreign.MemorySegment;

/**
 * The row kernel without the Vector API: a plain per-row loop that C2 turns into SIMD code by itself
 * (it is the same shape as the plain int32 sum the digest is measured against).
 */
final class ScalarRowKernel implements RowKernel {

  static final ScalarRowKernel INSTANCE = new ScalarRowKernel();

  private ScalarRowKernel() {}

  @Override
  public String name() {
    return "scalar";
  }

  @Override
  public RowSums sumRows(MemorySegment bytes, long offset, long rows) {
    long sum = 0;
    long weighted = 0;
    long rowStart = offset;
    for (long r = 1; r <= rows; r++) {
      long rowSum = 0;
      long rowEnd = rowStart + ROW_BYTES;
      for (long at = rowStart; at < rowEnd; at += Integer.BYTES) {
        rowSum += bytes.get(WORD, at);
      }
      sum += rowSum;
      weighted += rowSum * r;
      rowStart = rowEnd;
    }
    return new RowSums(rows, sum, weighted);
  }
}
