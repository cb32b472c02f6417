package dev.mx.transport.kit;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.BitSet;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A publisher's table of live registrations, in memory that receivers read one-sidedly before a
 * batch: slot {@code i} holds the cookie of the region registered in it, or 0 once that region was
 * deregistered. This is how a receiver learns that memory it was told about is gone, even where the
 * data path itself would still read it (UCX shared-memory or emulated GETs do not check keys; a
 * shared-memory mapping outlives its publisher). The memory is the caller's (ucx allocates it
 * through UCX, shm in a shared file); closing zeroes it.
 */
public final class RegionDirectory implements AutoCloseable {
  private final MemorySegment slots;
  private final BitSet used = new BitSet();
  private final int capacity;

  /** A directory over {@code slots}, one 8-byte slot per region; starts empty. */
  public RegionDirectory(MemorySegment slots) {
    this.slots = slots;
    this.capacity = (int) (slots.byteSize() / Long.BYTES);
    slots.fill((byte) 0);
  }

  /** Bytes a directory of {@code capacity} slots needs. */
  public static long bytesFor(int capacity) {
    return (long) capacity * Long.BYTES;
  }

  public MemorySegment segment() {
    return slots;
  }

  public int capacity() {
    return capacity;
  }

  /** A fresh non-zero cookie, so a reused slot never matches a region that used it before. */
  public static long newCookie() {
    return ThreadLocalRandom.current().nextLong() | 1L;
  }

  /**
   * Claims a free slot and publishes {@code cookie} in it; returns -1 when the directory is full.
   */
  public synchronized int claim(long cookie) {
    int slot = used.nextClearBit(0);
    if (slot >= capacity) {
      return -1;
    }
    used.set(slot);
    slots.setAtIndex(ValueLayout.JAVA_LONG, slot, cookie);
    return slot;
  }

  /** Marks the slot's region as gone (before UCX forgets its registration). */
  public synchronized void release(int slot) {
    slots.setAtIndex(ValueLayout.JAVA_LONG, slot, 0L);
    used.clear(slot);
  }

  /** Whether a directory image read from a peer still lists {@code cookie} in {@code slot}. */
  public static boolean isLive(MemorySegment image, int slot, long cookie) {
    return image.getAtIndex(ValueLayout.JAVA_LONG, slot) == cookie;
  }

  /** Marks every region gone (before the memory is released). */
  @Override
  public synchronized void close() {
    slots.fill((byte) 0);
    used.clear();
  }
}
