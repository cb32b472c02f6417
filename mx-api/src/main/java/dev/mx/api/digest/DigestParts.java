package dev.mx.api.digest;

import java.lang.foreign.MemorySegment;

/**
 * The digest of one byte region assembled from pieces that arrive in any order, on any thread: each
 * piece says where in the region it sits. A receiver digests each piece as soon as it lands (while
 * it is still in cache) instead of reading every byte again in a second pass, and never gathers a
 * scattered shard into one buffer first.
 *
 * <p>Obtained from {@link DigestProvider#parts}. Thread-safe; the caller adds every byte of the
 * region exactly once.
 */
public interface DigestParts {

  /**
   * Adds {@code bytes}, which sit at byte {@code offset} of the region.
   *
   * @return whether every byte of the region has now been added (exactly one call returns true)
   * @throws IllegalArgumentException when the piece reaches outside the region, or more bytes than
   *     the region holds were added
   */
  boolean add(long offset, MemorySegment bytes);

  /**
   * Copies {@code src} into {@code dst} (of the same size) and adds those bytes, which sit at byte
   * {@code offset} of the region: where the CPU moves a piece anyway, a provider that can fuses the
   * two, so the bytes are read from memory once. The default copies, then adds the copy.
   *
   * @return as {@link #add}
   * @throws IllegalArgumentException as {@link #add}, or when the sizes differ
   */
  default boolean copyAndAdd(long offset, MemorySegment src, MemorySegment dst) {
    requireSameSize(offset, src, dst);
    MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    return add(offset, dst);
  }

  /**
   * The check every {@link #copyAndAdd} makes first.
   *
   * @throws IllegalArgumentException naming both sizes and the region offset when they differ
   */
  static void requireSameSize(long offset, MemorySegment src, MemorySegment dst) {
    if (dst.byteSize() != src.byteSize()) {
      throw new IllegalArgumentException(
          "copy of "
              + src.byteSize()
              + " bytes into a destination of "
              + dst.byteSize()
              + " bytes at region offset "
              + offset);
    }
  }

  /**
   * The digest of the region (as {@link DigestProvider#digest} of its bytes in order).
   *
   * @throws IllegalStateException when bytes are still missing
   */
  String digest();
}
