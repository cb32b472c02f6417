package dev.mx.refit.verify;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.refit.stage.LandedWork;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The digest work of a wave's reads, read by read: each piece a read lands of a region whose digest
 * is assembled where it lands ({@link LandingDigest}). Its geometry (which read lands which bytes
 * of which region) holds as long as the reads do, so it is built once and kept across refits:
 * {@link #renew} readies it for the next refit with fresh accumulators, without rebuilding tens of
 * thousands of pieces and maps every step.
 */
@Internal
public final class LandingPlan {
  private final Map<ReadDescriptor, ReadLanding> byRead = new LinkedHashMap<>();
  private final List<LandingDigest> digests = new ArrayList<>();
  private Map<ReadDescriptor, LandedWork> sealed;

  /**
   * A region of {@code size} bytes whose digest this plan assembles, to give the pieces of {@link
   * #add}.
   *
   * @param compare throws when the finished digest is not the one published now (it is called in a
   *     later refit than the one that built the plan: it must look the expected digest up then)
   * @param afterVerified as {@link LandingDigest}, or null
   */
  public LandingDigest region(long size, Consumer<String> compare, Runnable afterVerified) {
    requireOpen();
    LandingDigest d = new LandingDigest(size, compare, afterVerified);
    digests.add(d);
    return d;
  }

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
    requireOpen();
    byRead
        .computeIfAbsent(read, k -> new ReadLanding())
        .add(new ReadLanding.PieceAt(digest, inRead, regionByte, landed));
  }

  /**
   * Readies the plan for one refit: every region gets a fresh accumulator from {@code provider} and
   * counts into {@code verified}, every read is unlanded. The first call seals the plan.
   *
   * @return the work of every read that lands a piece, for the wire (the same map every refit; not
   *     to be changed)
   * @throws IllegalStateException when {@code provider} cannot combine pieces of a region
   */
  public Map<ReadDescriptor, LandedWork> renew(DigestProvider provider, AtomicInteger verified) {
    if (sealed == null) {
      byRead.forEach((read, landing) -> landing.seal(read.nbytes()));
      sealed = Collections.unmodifiableMap(byRead);
    }
    for (LandingDigest d : digests) {
      d.renew(
          provider
              .parts(d.size())
              .orElseThrow(
                  () ->
                      new IllegalStateException(
                          "digest provider "
                              + provider.name()
                              + " cannot combine the pieces of a "
                              + d.size()
                              + "-byte region")),
          verified);
    }
    for (ReadLanding r : byRead.values()) {
      r.reset();
    }
    return sealed;
  }

  /** Regions whose digest this plan assembles. */
  public int regionCount() {
    return digests.size();
  }

  private void requireOpen() {
    if (sealed != null) {
      throw new IllegalStateException("the landing plan is sealed: it was renewed for a refit");
    }
  }
}
