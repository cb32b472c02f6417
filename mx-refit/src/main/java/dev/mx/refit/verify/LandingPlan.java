package dev.mx.refit.verify;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.refit.stage.LandedWork;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The digest work of one refit's reads, read by read: each piece a read lands of a region whose
 * digest is assembled where it lands ({@link LandingDigest}). Built once per refit, then {@link
 * #sealInto sealed} into the work the pipelined wire binds to each read.
 */
@Internal
public final class LandingPlan {
  private final Map<ReadDescriptor, ReadLanding> byRead = new LinkedHashMap<>();

  /**
   * Bytes {@code [inRead, inRead + landed.byteSize())} of {@code read} are bytes {@code
   * [regionByte, ...)} of {@code digest}'s region; they land at {@code landed}.
   */
  public void add(
      ReadDescriptor read,
      long inRead,
      long regionByte,
      MemorySegment landed,
      LandingDigest digest) {
    byRead
        .computeIfAbsent(read, k -> new ReadLanding())
        .add(new ReadLanding.PieceAt(digest, inRead, regionByte, landed));
  }

  /**
   * Puts the work of every read that lands a piece into {@code out}: the wire's own map, without a
   * second map of every read per step.
   */
  public void sealInto(Map<ReadDescriptor, LandedWork> out) {
    byRead.forEach((read, landing) -> out.put(read, landing.seal(read.nbytes())));
  }
}
