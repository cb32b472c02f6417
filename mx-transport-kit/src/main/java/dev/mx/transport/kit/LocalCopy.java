package dev.mx.transport.kit;

import dev.mx.api.transport.LandingFolds;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * A validated batch of reads from an endpoint's own session: plain copies between its registered
 * segments. Backends build it with {@link AbstractTransport#prepareLocalCopy} and run {@link
 * #copy()} when their read moves data (after every peer of the call was checked).
 */
public final class LocalCopy implements PendingRead {
  private final String session;
  private final List<ReadDescriptor> group;
  private final MemorySegment[] src;
  private final long[] srcOff;
  private final MemorySegment[] dst;
  private final long[] dstOff;
  private final long[] len;
  private final long bytes;

  LocalCopy(
      String session,
      List<ReadDescriptor> group,
      MemorySegment[] src,
      long[] srcOff,
      MemorySegment[] dst,
      long[] dstOff,
      long[] len,
      long bytes) {
    this.session = session;
    this.group = group;
    this.src = src;
    this.srcOff = srcOff;
    this.dst = dst;
    this.dstOff = dstOff;
    this.len = len;
    this.bytes = bytes;
  }

  /** Performs every copy, in order, through the calling thread's {@link LandingFolds}. */
  public void copy() {
    LandingFolds folds = LandingFolds.current();
    for (int i = 0; i < len.length; i++) {
      folds.copy(group.get(i), src[i], srcOff[i], dst[i], dstOff[i]);
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
