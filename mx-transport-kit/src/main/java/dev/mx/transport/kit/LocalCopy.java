package dev.mx.transport.kit;

import dev.mx.api.transport.PendingRead;
import java.lang.foreign.MemorySegment;

/**
 * A validated batch of reads from an endpoint's own session: plain copies between its registered
 * segments. Backends build it with {@link AbstractTransport#prepareLocalCopy} and run {@link
 * #copy()} when their read moves data (after every peer of the call was checked).
 */
public final class LocalCopy implements PendingRead {
  private final String session;
  private final MemorySegment[] src;
  private final long[] srcOff;
  private final MemorySegment[] dst;
  private final long[] dstOff;
  private final long[] len;
  private final long bytes;

  LocalCopy(
      String session,
      MemorySegment[] src,
      long[] srcOff,
      MemorySegment[] dst,
      long[] dstOff,
      long[] len,
      long bytes) {
    this.session = session;
    this.src = src;
    this.srcOff = srcOff;
    this.dst = dst;
    this.dstOff = dstOff;
    this.len = len;
    this.bytes = bytes;
  }

  /** Performs every copy, in order. */
  public void copy() {
    for (int i = 0; i < len.length; i++) {
      MemorySegment.copy(src[i], srcOff[i], dst[i], dstOff[i], len[i]);
    }
  }

  @Override
  public String session() {
    return session;
  }

  @Override
  public int descriptorCount() {
    return len.length;
  }

  @Override
  public long bytes() {
    return bytes;
  }
}
