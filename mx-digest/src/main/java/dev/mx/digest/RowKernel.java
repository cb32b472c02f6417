package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** The hot loop: the {@link RowSums} of whole rows read straight from memory. */
interface RowKernel {

  /** Words per row (fixed by the reference). */
  int ROW_WORDS = 1024;

  /** Bytes per row. */
  int ROW_BYTES = ROW_WORDS * Integer.BYTES;

  /** A little-endian int32 at any byte address. */
  ValueLayout.OfInt WORD = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

  /** Short name for reports, e.g. {@code vector-512} or {@code scalar}. */
  String name();

  /** The row sums of {@code rows} whole rows starting at byte {@code offset} of {@code bytes}. */
  RowSums sumRows(MemorySegment bytes, long offset, long rows);
}
