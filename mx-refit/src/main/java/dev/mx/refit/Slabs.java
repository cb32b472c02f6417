package dev.mx.refit;

import java.lang.foreign.MemorySegment;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One large allocation carved into named buffers, each aligned to a cache line: fewer, larger
 * regions to allocate and register than one per parameter.
 */
final class Slabs {
  /** Alignment of every carved buffer (a cache line; slabs themselves are page-aligned). */
  static final long ALIGN = 64;

  private Slabs() {}

  /** Bytes a slab needs to hold buffers of these sizes, in order, each aligned. */
  static long size(Collection<Long> sizes) {
    long total = 0;
    for (long size : sizes) {
      total = align(total) + size;
    }
    return align(total);
  }

  /** The named buffers of the given sizes, in order, cut from {@code slab}. */
  static <K> Map<K, MemorySegment> carve(MemorySegment slab, Map<K, Long> sizes) {
    Map<K, MemorySegment> out = new LinkedHashMap<>();
    long at = 0;
    for (Map.Entry<K, Long> e : sizes.entrySet()) {
      at = align(at);
      out.put(e.getKey(), slab.asSlice(at, e.getValue()));
      at += e.getValue();
    }
    return Collections.unmodifiableMap(out);
  }

  static long align(long v) {
    return (v + ALIGN - 1) & -ALIGN;
  }
}
