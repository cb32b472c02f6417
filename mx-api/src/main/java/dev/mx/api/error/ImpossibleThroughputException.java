package dev.mx.api.error;

import java.util.Locale;

/**
 * The wire reported more bytes per second than the configured ceiling allows: the transfer almost
 * certainly delivered nothing. Treat the refit as failed, not fast.
 */
public class ImpossibleThroughputException extends MxException {
  private static final long serialVersionUID = 1L;
  private final int rank;
  private final long step;
  private final double impliedGbps;
  private final double ceilingGbps;

  public ImpossibleThroughputException(
      int rank, long step, long bytes, double wireSeconds, double impliedGbps, double ceilingGbps) {
    super(
        String.format(
            Locale.ROOT,
            "rank %d step %d: %d bytes in %.6f s implies %.1f Gbps, above the ceiling of %s Gbps "
                + "(MX_RESHARD_MAX_GBPS). Treat this refit as failed, not fast.",
            rank,
            step,
            bytes,
            wireSeconds,
            impliedGbps,
            ceilingGbps));
    this.rank = rank;
    this.step = step;
    this.impliedGbps = impliedGbps;
    this.ceilingGbps = ceilingGbps;
  }

  public int rank() {
    return rank;
  }

  public long step() {
    return step;
  }

  public double impliedGbps() {
    return impliedGbps;
  }

  public double ceilingGbps() {
    return ceilingGbps;
  }
}
