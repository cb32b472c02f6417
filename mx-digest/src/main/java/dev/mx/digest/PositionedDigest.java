package dev.mx.digest;

import dev.mx.api.digest.DigestParts;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shard digest of a region fed in pieces at their positions, in any order and from any thread:
 * equal to {@link ShardDigest#digest} of the whole region.
 *
 * <p>Why this works: every scalar the digest hashes is a sum, mod 2^64, of one term per byte. A
 * little-endian signed int32 word is {@code b0 + b1·2^8 + b2·2^16 + sext(b3)·2^24}, so even a word
 * split across two pieces contributes byte by byte; its weight (its row's 1-based index, or its
 * 1-based position among the tail words) depends only on its position and the region's length, both
 * known up front. Whole rows inside a piece still go through the fast row kernel.
 */
public final class PositionedDigest implements DigestParts {
  private static final int ROW_WORDS = RowKernel.ROW_WORDS;
  private static final long ROW_BYTES = RowKernel.ROW_BYTES;

  private final long byteCount;
  private final long words;
  private final long rows;
  private final long rowWords;
  private final AtomicLong added = new AtomicLong();

  private long rowSum;
  private long rowWeighted;
  private long tailSum;
  private long tailWeighted;
  private long ragged;

  /** An empty accumulator for a region of {@code byteCount} bytes. */
  public PositionedDigest(long byteCount) {
    if (byteCount < 0) {
      throw new IllegalArgumentException("region size must not be negative: " + byteCount);
    }
    this.byteCount = byteCount;
    this.words = byteCount / Integer.BYTES;
    this.rows = byteCount / ROW_BYTES;
    this.rowWords = rows * ROW_WORDS;
  }

  @Override
  public boolean add(long offset, MemorySegment bytes) {
    return fold(offset, bytes, null);
  }

  /**
   * Copies {@code src} into {@code dst} and adds its bytes, in one pass: whole rows go through the
   * fused kernel, which reads each source vector once, stores it and sums it.
   */
  @Override
  public boolean copyAndAdd(long offset, MemorySegment src, MemorySegment dst) {
    DigestParts.requireSameSize(offset, src, dst);
    return fold(offset, src, dst);
  }

  /** Adds {@code bytes} at {@code offset}, also copying them into {@code copy} unless null. */
  private boolean fold(long offset, MemorySegment bytes, MemorySegment copy) {
    long length = bytes.byteSize();
    if (offset < 0 || offset > byteCount - length) {
      throw new IllegalArgumentException(
          "piece ["
              + offset
              + ", "
              + (offset + length)
              + ") outside the region of "
              + byteCount
              + " bytes");
    }
    Sums s = new Sums();
    long x = 0;
    while (x < length && ((offset + x) & 3) != 0) {
      s.addByte(offset + x, copyByte(bytes, copy, x));
      x++;
    }
    while (length - x >= Integer.BYTES && (offset + x) / Integer.BYTES < words) {
      long word = (offset + x) / Integer.BYTES;
      if (word < rowWords && word % ROW_WORDS == 0) {
        long whole = Math.min((length - x) / ROW_BYTES, rows - word / ROW_WORDS);
        if (whole > 0) {
          RowSums r =
              copy == null
                  ? RowKernels.forBytes(whole * ROW_BYTES).sumRows(bytes, x, whole)
                  : RowKernels.forCopy().copyRows(bytes, x, copy, x, whole);
          s.rowSum += r.sum();
          s.rowWeighted += r.weightedSum() + (word / ROW_WORDS) * r.sum();
          x += whole * ROW_BYTES;
          continue;
        }
      }
      if (word < rowWords) {
        // Part of a row: every word of it has the row's weight, so one vector sum serves.
        int count = (int) Math.min(ROW_WORDS - word % ROW_WORDS, (length - x) / Integer.BYTES);
        RowKernel k = copy == null ? RowKernels.forBytes(length) : RowKernels.forCopy();
        long sum = k.copyWordSum(bytes, x, copy, x, count);
        s.rowSum += sum;
        s.rowWeighted += (word / ROW_WORDS + 1) * sum;
        x += (long) count * Integer.BYTES;
        continue;
      }
      int value = bytes.get(RowKernel.WORD, x);
      if (copy != null) {
        copy.set(RowKernel.WORD, x, value);
      }
      s.addWord(word, value);
      x += Integer.BYTES;
    }
    for (; x < length; x++) {
      s.addByte(offset + x, copyByte(bytes, copy, x));
    }
    synchronized (this) {
      rowSum += s.rowSum;
      rowWeighted += s.rowWeighted;
      tailSum += s.tailSum;
      tailWeighted += s.tailWeighted;
      ragged += s.ragged;
    }
    long now = added.addAndGet(length);
    if (now > byteCount) {
      throw new IllegalArgumentException(
          now + " bytes added to a region of " + byteCount + " bytes: a piece was added twice");
    }
    return now == byteCount && length > 0;
  }

  private static byte copyByte(MemorySegment bytes, MemorySegment copy, long at) {
    byte b = bytes.get(ValueLayout.JAVA_BYTE, at);
    if (copy != null) {
      copy.set(ValueLayout.JAVA_BYTE, at, b);
    }
    return b;
  }

  /** Bytes added so far. */
  public long addedBytes() {
    return added.get();
  }

  @Override
  public String digest() {
    long have = added.get();
    if (have != byteCount) {
      throw new IllegalStateException(
          (byteCount - have) + " of the region's " + byteCount + " bytes were not added");
    }
    long[] scalars = new long[7];
    int n = 0;
    scalars[n++] = byteCount;
    synchronized (this) {
      if (rows > 0) {
        scalars[n++] = rowSum;
        scalars[n++] = rowWeighted;
      }
      if (words > rowWords) {
        scalars[n++] = tailSum;
        scalars[n++] = tailWeighted;
      }
      if (byteCount % Integer.BYTES != 0) {
        scalars[n++] = ragged;
        scalars[n++] = byteCount % Integer.BYTES;
      }
    }
    return ShardDigest.hashScalars(java.util.Arrays.copyOf(scalars, n));
  }

  /** One piece's terms, summed without a lock and merged once. */
  private final class Sums {
    long rowSum;
    long rowWeighted;
    long tailSum;
    long tailWeighted;
    long ragged;

    void addByte(long position, byte b) {
      long word = position / Integer.BYTES;
      if (word >= words) {
        ragged += b & 0xFF;
        return;
      }
      int k = (int) (position % Integer.BYTES);
      // The top byte carries the sign of the signed int32 word.
      long value = k == 3 ? ((long) b) << 24 : ((long) (b & 0xFF)) << (8 * k);
      addWord(word, value);
    }

    void addWord(long word, long value) {
      if (word < rowWords) {
        rowSum += value;
        rowWeighted += (word / ROW_WORDS + 1) * value;
      } else {
        tailSum += value;
        tailWeighted += (word - rowWords + 1) * value;
      }
    }
  }
}
