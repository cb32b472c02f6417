package dev.mx.api.memory;

import dev.mx.api.DType;
import dev.mx.api.digest.DigestParts;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.MemorySegment;

/**
 * What mx does to memory of one kind, wherever it lives: a device implementation runs each
 * operation on the device that holds the bytes (segments of device memory carry an address and a
 * length and are never dereferenced on the CPU). Host memory has a default in {@code mx-refit};
 * device kinds come from a {@link MemoryOpsProvider}. Every segment given to one instance is memory
 * of {@link #kind()}, except the {@code host} side of {@link #copyToHost} and {@link
 * #copyFromHost}.
 */
public interface MemoryOps {

  /** The memory these operations work on. */
  MemoryKind kind();

  /**
   * Allocates {@code bytes} of zeroed memory of {@link #kind()}; closing the result frees it (the
   * registration here is ownership, not a transport registration).
   */
  MemoryRegistration allocate(long bytes);

  /**
   * Copies {@code bytes} from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset};
   * waits.
   */
  void copy(MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes);

  /**
   * Copies {@code lengths[i]} bytes from {@code src} at {@code srcOffsets[i]} to {@code dsts[i]} at
   * {@code dstOffsets[i]} for every {@code i}, in order, and waits once (a device issues them all
   * first).
   */
  default void copyAll(
      MemorySegment src,
      long[] srcOffsets,
      MemorySegment[] dsts,
      long[] dstOffsets,
      long[] lengths) {
    for (int i = 0; i < lengths.length; i++) {
      copy(src, srcOffsets[i], dsts[i], dstOffsets[i], lengths[i]);
    }
  }

  /**
   * Copies {@code bytes} of this kind's memory at {@code srcOffset} of {@code src} into host
   * memory; waits.
   */
  void copyToHost(
      MemorySegment src, long srcOffset, MemorySegment host, long hostOffset, long bytes);

  /**
   * Copies {@code bytes} of host memory into this kind's memory at {@code dstOffset} of {@code
   * dst}; waits.
   */
  void copyFromHost(
      MemorySegment host, long hostOffset, MemorySegment dst, long dstOffset, long bytes);

  /**
   * Whether {@link #viewCopy} converts {@code from} to {@code to} (a plain copy when they are
   * equal).
   */
  boolean supportsCast(DType from, DType to);

  /**
   * {@code dst[dstView] = src[srcView]} as {@code torch.as_strided} views: element offsets and
   * strides in elements of each side's type, one shape; converts {@code from} to {@code to}; waits.
   * The caller has checked that both views lie inside their segments.
   */
  void viewCopy(
      MemorySegment src,
      long srcOffset,
      DType from,
      long[] srcStrides,
      MemorySegment dst,
      long dstOffset,
      DType to,
      long[] dstStrides,
      long[] shape);

  /**
   * The shard digest (32 hex characters, equal to the CPU digest of the same bytes) of {@code
   * bytes}.
   */
  String digest(MemorySegment bytes);

  /**
   * The digest of a region of {@code byteCount} bytes of this kind's memory assembled from pieces
   * where they lie, in any order ({@link DigestParts#add} reads each piece once on the device
   * instead of a gather into scratch memory and a second pass); empty where this kind cannot (the
   * default: the caller gathers the region and calls {@link #digest}).
   */
  default java.util.Optional<DigestParts> digestParts(long byteCount) {
    return java.util.Optional.empty();
  }
}
