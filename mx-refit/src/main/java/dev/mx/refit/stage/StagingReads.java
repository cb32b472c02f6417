package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.ReadDescriptor;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The full-pull and staged reads of one wave, by destination address: which reads fill a staging
 * buffer, so its digest can ride on their copies.
 */
@Internal
public final class StagingReads {
  private final ReadDescriptor[] byDestination;
  private final long[] destinations;

  private StagingReads(List<ReadDescriptor> reads) {
    this.byDestination = reads.toArray(ReadDescriptor[]::new);
    java.util.Arrays.sort(byDestination, Comparator.comparingLong(ReadDescriptor::dstAddr));
    this.destinations = new long[byDestination.length];
    for (int i = 0; i < byDestination.length; i++) {
      destinations[i] = byDestination[i].dstAddr();
    }
  }

  /** The staged reads of {@code wave} (they travel with the full pulls). */
  public static StagingReads of(Descriptors wave) {
    return new StagingReads(wave.groups().full());
  }

  /**
   * The reads that land in {@code [base, base + bytes)}, in address order, when they fill it
   * exactly: each inside it, none overlapping another, no gap. Null otherwise.
   */
  public List<ReadDescriptor> filling(long base, long bytes) {
    int i = java.util.Arrays.binarySearch(destinations, base);
    if (i < 0) {
      return null; // nothing lands at its first byte
    }
    while (i > 0 && destinations[i - 1] == base) {
      i--;
    }
    List<ReadDescriptor> out = new ArrayList<>();
    long until = base;
    long end = base + bytes;
    for (; i < byDestination.length && destinations[i] < end; i++) {
      ReadDescriptor r = byDestination[i];
      if (r.dstAddr() != until || r.dstAddr() + r.nbytes() > end) {
        return null;
      }
      out.add(r);
      until += r.nbytes();
    }
    return until == end ? out : null;
  }
}
