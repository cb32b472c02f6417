package dev.mx.transport.nixl;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.PendingRead;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** One peer's posted group. Mutable fields guarded by the agent lock. */
final class NixlBatch implements PendingRead {
  final String session;
  final String agentName;
  final NixlRequest prepared;
  final int count;
  final long bytes;
  boolean done;
  int status = NixlStatus.IN_PROG;
  String failedCall;

  NixlBatch(String session, String agentName, NixlRequest prepared, int count, long bytes) {
    this.session = session;
    this.agentName = agentName;
    this.prepared = prepared;
    this.count = count;
    this.bytes = bytes;
  }

  @Override
  public String session() {
    return session;
  }

  @Override
  public int descriptorCount() {
    return count;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  String describeBatch() {
    return count
        + " reads ("
        + bytes
        + " bytes) from peer '"
        + session
        + "' (NIXL agent '"
        + agentName
        + "')";
  }

  /**
   * Throws for the batches of one await that did not finish: a timeout naming the late ones (the
   * failed ones suppressed), else the first failure (the rest suppressed); nothing when all did.
   */
  static void throwIfFailed(List<NixlBatch> batches, Duration timeout, boolean closedMeanwhile) {
    List<NixlBatch> late = new ArrayList<>();
    List<NixlBatch> failed = new ArrayList<>();
    for (NixlBatch b : batches) {
      if (b.done) {
        continue;
      }
      (b.status == NixlStatus.IN_PROG ? late : failed).add(b);
    }
    if (!late.isEmpty()) {
      StringBuilder sb =
          new StringBuilder("nixl transport: reads did not complete within ")
              .append(timeout)
              .append(closedMeanwhile ? " (the endpoint was closed meanwhile)" : "")
              .append("; outstanding: ");
      for (int i = 0; i < late.size(); i++) {
        sb.append(i == 0 ? "" : ", ")
            .append(late.get(i).describeBatch())
            .append(", still ")
            .append(NixlStatus.describe(NixlStatus.IN_PROG));
      }
      TransportTimeoutException e =
          new TransportTimeoutException(
              late.getFirst().session,
              sb.append("; their requests were released (aborted)").toString());
      for (NixlBatch b : failed) {
        e.addSuppressed(failure(b));
      }
      throw e;
    }
    if (!failed.isEmpty()) {
      TransportException e = failure(failed.getFirst());
      for (NixlBatch b : failed.subList(1, failed.size())) {
        e.addSuppressed(failure(b));
      }
      throw e;
    }
  }

  private static TransportException failure(NixlBatch b) {
    return new TransportException(
        b.session,
        "nixl transport: "
            + b.describeBatch()
            + " failed: "
            + (b.failedCall == null ? "post_xfer_req" : b.failedCall)
            + " returned "
            + NixlStatus.describe(b.status));
  }
}
