package dev.mx.transport.ucx;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A publisher's table of live registrations, in native memory that receivers read with one GET before a
 * batch: slot {@code i} holds the cookie of the region registered in it, or 0 once that region was
 * deregistered. This is how a receiver learns, one-sidedly, that memory it was told about is gone, even
 * on transports where UCX itself would still read it (shared-memory or emulated GETs do not check keys).
 */
final class RegionDirectory implements AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final MemorySegment slots;
  private final BitSet used = new BitSet();
  private final int capacity;

  RegionDirectory(int capacity) {
    this.capacity = capacity;
    this.slots = arena.allocate((long) capacity * Long.BYTES, 64);
  }

  MemorySegment segment() {
    return slots;
  }

  int capacity() {
    return capacity;
  }

  /** A fresh non-zero cookie, so a reused slot never matches a region that used it before. */
  static long newCookie() {
    return ThreadLocalRandom.current().nextLong() | 1L;
  }

  /** Claims a free slot and publishes {@code cookie} in it; returns -1 when the directory is full. */
  synchronized int claim(long cookie) {
    int slot = used.nextClearBit(0);
    if (slot >= capacity) {
      return -1;
    }
    used.set(slot);
    slots.setAtIndex(ValueLayout.JAVA_LONG, slot, cookie);
    return slot;
  }

  /** Marks the slot's region as gone (before UCX forgets its registration). */
  synchronized void release(int slot) {
    slots.setAtIndex(ValueLayout.JAVA_LONG, slot, 0L);
    used.clear(slot);
  }

  /** Whether a directory image read from a peer still lists {@code cookie} in {@code slot}. */
  static boolean isLive(MemorySegment image, int slot, long cookie) {
    return image.getAtIndex(ValueLayout.JAVA_LONG, slot) == cookie;
  }

  @Override
  public void close() {
    synchronized (this) {
      slots.fill((byte) 0);
      used.clear();
    }
    arena.close();
  }
}
