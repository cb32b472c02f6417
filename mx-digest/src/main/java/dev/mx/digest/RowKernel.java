package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** The hot loop: the {@link RowSums} of whole rows read straight from memory. */
abstract class RowKernel {

  /** Words per row (fixed by the reference). */
  static final int ROW_WORDS = 1024;

  /** Bytes per row. */
  static final int ROW_BYTES = ROW_WORDS * Integer.BYTES;

  /** A little-endian int32 at any byte address. */
  static final ValueLayout.OfInt WORD =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** Short name for reports, e.g. {@code vector-512} or {@code scalar}. */
  abstract String name();

  /** The exact sum of the 1024 words of the row starting at byte {@code rowStart}. */
  abstract long rowSum(MemorySegment bytes, long rowStart);

  /**
   * Copies the row at byte {@code srcStart} of {@code src} to byte {@code dstStart} of {@code dst}
   * and returns its exact sum, reading each source word once: the fused kernel a receiver runs
   * where the CPU moves the bytes, so verifying them costs no second pass over memory.
   */
  abstract long copyRowSum(MemorySegment src, long srcStart, MemorySegment dst, long dstStart);

  /** The row sums of {@code rows} whole rows starting at byte {@code offset} of {@code bytes}. */
  final RowSums sumRows(MemorySegment bytes, long offset, long rows) {
    long sum = 0;
    long weighted = 0;
    long rowStart = offset;
    for (long r = 1; r <= rows; r++) {
      long rowSum = rowSum(bytes, rowStart);
      sum += rowSum;
      weighted += rowSum * r;
      rowStart += ROW_BYTES;
    }
    return new RowSums(rows, sum, weighted);
  }

  /**
   * Copies {@code rows} whole rows from byte {@code srcOffset} of {@code src} to byte {@code
   * dstOffset} of {@code dst} and returns their {@link RowSums}, as {@link #sumRows} of the source.
   */
  final RowSums copyRows(
      MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long rows) {
    long sum = 0;
    long weighted = 0;
    long from = srcOffset;
    long to = dstOffset;
    for (long r = 1; r <= rows; r++) {
      long rowSum = copyRowSum(src, from, dst, to);
      sum += rowSum;
      weighted += rowSum * r;
      from += ROW_BYTES;
      to += ROW_BYTES;
    }
    return new RowSums(rows, sum, weighted);
  }

  /**
   * The exact sum of the {@code count} words (at most one row's) at byte {@code srcStart} of {@code
   * src}, also copied to byte {@code dstStart} of {@code dst} unless that is null: a piece of a
   * row, which a read that does not start or end at a row boundary lands (a column block's rows,
   * say).
   */
  long copyWordSum(MemorySegment src, long srcStart, MemorySegment dst, long dstStart, int count) {
    long sum = 0;
    for (long at = 0, end = (long) count * Integer.BYTES; at < end; at += Integer.BYTES) {
      int word = src.get(WORD, srcStart + at);
      if (dst != null) {
        dst.set(WORD, dstStart + at, word);
      }
      sum += word;
    }
    return sum;
  }
}
