package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.Executor;

/**
 * The shard digest of bytes fed in order, in pieces of any size and alignment: the result equals
 * {@link ShardDigest#digest(MemorySegment)} of the concatenation. This is how a strided region is
 * digested without copying it ({@link ShardRegion#digestShardRegion}), one contiguous run at a
 * time.
 *
 * <p>Whole rows inside a piece go through the fast row kernel; only a row that straddles two
 * pieces, the last partial row and up to three bytes of a split word are handled word by word. Not
 * thread-safe; one instance digests one byte stream.
 */
public final class StreamingDigest {

  private long byteCount;
  private RowSums rows = RowSums.EMPTY;

  /**
   * Words of the row that is not yet complete: their sum and their sum weighted by position
   * (1-based).
   */
  private int partialWords;

  private long partialSum;
  private long partialWeightedSum;

  /** Up to three bytes of a word that is not yet complete, little-endian. */
  private int pendingBytes;

  private int pendingWord;

  /** Feeds {@code bytes}, digesting whole rows on the calling thread. */
  public StreamingDigest update(MemorySegment bytes) {
    return update(bytes, null, 1);
  }

  /**
   * Feeds {@code bytes}, splitting its whole rows into {@code tasks} contiguous row ranges run on
   * {@code executor} (one of them on the calling thread). The result does not depend on the split.
   * A segment that only its owner thread may access is digested on the calling thread.
   */
  public StreamingDigest update(MemorySegment bytes, Executor executor, int tasks) {
    long length = bytes.byteSize();
    long at = 0;
    byteCount += length;
    while (pendingBytes > 0 && at < length) {
      pendingWord |= (bytes.get(ValueLayout.JAVA_BYTE, at++) & 0xFF) << (8 * pendingBytes);
      if (++pendingBytes == Integer.BYTES) {
        addWord(pendingWord);
        pendingBytes = 0;
        pendingWord = 0;
      }
    }
    if (partialWords > 0) {
      long words = Math.min((length - at) / Integer.BYTES, RowKernel.ROW_WORDS - partialWords);
      at = addWords(bytes, at, words);
    }
    if (partialWords == 0) {
      long wholeRows = (length - at) / RowKernel.ROW_BYTES;
      if (wholeRows > 0) {
        rows = rows.followedBy(ParallelRows.sumRows(bytes, at, wholeRows, executor, tasks));
        at += wholeRows * RowKernel.ROW_BYTES;
      }
    }
    at = addWords(bytes, at, (length - at) / Integer.BYTES);
    while (at < length) {
      pendingWord |= (bytes.get(ValueLayout.JAVA_BYTE, at++) & 0xFF) << (8 * pendingBytes++);
    }
    return this;
  }

  private long addWords(MemorySegment bytes, long at, long words) {
    long end = at + words * Integer.BYTES;
    for (; at < end; at += Integer.BYTES) {
      addWord(bytes.get(RowKernel.WORD, at));
    }
    return end;
  }

  private void addWord(int word) {
    partialWords++;
    partialSum += word;
    partialWeightedSum += (long) word * partialWords;
    if (partialWords == RowKernel.ROW_WORDS) {
      rows = rows.followedBy(RowSums.ofRow(partialSum));
      partialWords = 0;
      partialSum = 0;
      partialWeightedSum = 0;
    }
  }

  /** Bytes fed so far. */
  public long byteCount() {
    return byteCount;
  }

  /**
   * The scalars hashed by the reference, in its order: {@code n}; the row sum and weighted row sum
   * if there is a whole row; the tail-word sum and weighted sum if there are tail words; the sum of
   * the ragged trailing bytes (unsigned) and {@code n mod 4} if {@code n} is not a multiple of 4.
   */
  public long[] scalars() {
    long[] out = new long[7];
    int count = 0;
    out[count++] = byteCount;
    if (rows.rows() > 0) {
      out[count++] = rows.sum();
      out[count++] = rows.weightedSum();
    }
    if (partialWords > 0) {
      out[count++] = partialSum;
      out[count++] = partialWeightedSum;
    }
    if (pendingBytes > 0) {
      long ragged = 0;
      for (int i = 0; i < pendingBytes; i++) {
        ragged += (pendingWord >>> (8 * i)) & 0xFF;
      }
      out[count++] = ragged;
      out[count++] = pendingBytes;
    }
    return java.util.Arrays.copyOf(out, count);
  }

  /**
   * The digest of everything fed so far (32 lowercase hex characters); feeding may continue
   * afterwards.
   */
  public String digest() {
    return ShardDigest.hashScalars(scalars());
  }
}
