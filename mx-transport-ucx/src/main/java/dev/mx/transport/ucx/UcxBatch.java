package dev.mx.transport.ucx;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * Reads from one peer, in two phases, each a set of read requests the peer's serving side answers:
 * the endpoint's {@code start} issues only the probe (is each region this batch reads still
 * registered?); its {@code await} checks the probe of every batch, then issues one data request per
 * descriptor.
 */
final class UcxBatch implements PendingRead {
  final UcxPeer peer;
  final List<ReadDescriptor> group;
  final long[] src;
  final long[] dst;
  final long[] len;

  /** Index of each descriptor's source region in the peer's metadata. */
  final int[] region;

  final boolean[] regionUsed;
  final long bytes;
  UcxConnection connection;

  /**
   * Names this batch in the peer's replies; registered with the transport while the batch waits for
   * them.
   */
  long token;

  /** The request headers of the current phase; freed by the GC once no send references them. */
  MemorySegment headers;

  /** Position (in the peer's metadata) of the first region the probe found deregistered, or -1. */
  volatile int deadRegion = -1;

  Flush probe;
  Flush data;

  /** Rendezvous receives of the data phase still in progress (worker lock). */
  private final List<Receiving> receives = new ArrayList<>();

  private record Receiving(int index, UcpRequest request) {}

  /** Failure of the current phase (connection or flush), once settled. */
  String failure;

  UcxBatch(
      UcxPeer peer,
      List<ReadDescriptor> group,
      long[] src,
      long[] dst,
      long[] len,
      int[] region,
      boolean[] regionUsed,
      long bytes) {
    this.peer = peer;
    this.group = group;
    this.src = src;
    this.dst = dst;
    this.len = len;
    this.region = region;
    this.regionUsed = regionUsed;
    this.bytes = bytes;
  }

  /**
   * Whether the current phase has finished, successfully or not. A failed endpoint wins over a
   * completed flush: when UCX fails an endpoint it purges what was outstanding and completes its
   * flushes without an error (in the same progress call that reports the failure), so such a flush
   * proves nothing.
   */
  boolean settled() {
    if (connection.failure != null) {
      failure = connection.failure;
      return true;
    }
    Flush f = data != null ? data : probe;
    if (f.done) {
      if (f.failure != null && failure == null) {
        failure = f.failure;
      }
      return true;
    }
    return false;
  }

  /**
   * Records a rendezvous receive of {@code phase}, completing it at once if UCX already has. Worker
   * lock held.
   */
  void receiving(Flush phase, int index, UcpRequest request) {
    if (!settleReceive(phase, index, request)) {
      receives.add(new Receiving(index, request));
    }
  }

  /** Counts the receives that completed since the last call. Worker lock held. */
  void pollReceives() {
    Flush phase = data;
    receives.removeIf(r -> settleReceive(phase, r.index(), r.request()));
  }

  private boolean settleReceive(Flush phase, int index, UcpRequest request) {
    if (request != null && !request.isCompleted()) {
      return false;
    }
    if (request == null || request.getStatus() == UcsConstants.STATUS.UCS_OK) {
      phase.landed();
    } else {
      phase.fail(
          "receiving descriptor #" + index + " failed (UCS status " + request.getStatus() + ")");
    }
    return true;
  }

  /** What the batch was doing, for messages. */
  String phase() {
    return data != null ? "reading" : "checking the peer's regions, nothing issued yet";
  }

  @Override
  public String session() {
    return peer.session;
  }

  @Override
  public int descriptorCount() {
    return len.length;
  }

  @Override
  public long bytes() {
    return bytes;
  }

  /**
   * Completion of one phase: every reply of its {@code outstanding} requests has landed, or one
   * failed. Updated from progress, under the worker lock; read by waiting threads.
   */
  static final class Flush {
    volatile boolean done;
    volatile String failure;
    private int outstanding; // worker lock

    Flush(int outstanding) {
      this.outstanding = outstanding;
      this.done = outstanding == 0;
    }

    /** One reply landed. Worker lock held. */
    void landed() {
      if (--outstanding == 0) {
        done = true;
      }
    }

    /** The phase failed. Worker lock held. */
    void fail(String why) {
      if (failure == null) {
        failure = why;
      }
      done = true;
    }
  }

  /**
   * Rejects the batch, naming its first descriptor concerned, when a region it reads was
   * deregistered.
   */
  void checkStillPublished() {
    for (int r = 0; r < regionUsed.length; r++) {
      if (regionUsed[r] && deadRegion == r) {
        int first = 0;
        while (region[first] != r) {
          first++;
        }
        UcxPeerMetadata.Region gone = peer.meta.regions().get(r);
        throw new TransportException(
            peer.session,
            "ucx transport: descriptor #"
                + first
                + " "
                + group.get(first)
                + " reads region "
                + UcxRegions.describe(gone.base(), gone.length())
                + " which peer '"
                + peer.session
                + "' has deregistered since it published its metadata; nothing in this batch was read");
      }
    }
  }

  /**
   * After a wait: if any batch is unfinished (late) or failed, force-close those peers' endpoints
   * (so nothing lands after the call returns) and throw, naming them; a timeout wins over a
   * failure.
   */
  static void throwIfFailed(
      List<UcxBatch> batches, Duration timeout, ReentrantLock workerLock, boolean endpointClosed) {
    List<UcxBatch> late = new ArrayList<>();
    List<UcxBatch> failed = new ArrayList<>();
    for (UcxBatch b : batches) {
      if (!b.settled()) {
        late.add(b);
      } else if (b.failure != null) {
        failed.add(b);
      }
    }
    if (late.isEmpty() && failed.isEmpty()) {
      return;
    }
    workerLock.lock();
    try {
      for (UcxBatch b : late) {
        b.peer.breakConnection(b.connection, "a read timed out after " + timeout);
      }
      for (UcxBatch b : failed) {
        b.peer.breakConnection(b.connection, b.failure);
      }
    } finally {
      workerLock.unlock();
    }
    if (!late.isEmpty()) {
      StringBuilder sb =
          new StringBuilder("ucx transport: reads did not complete within ")
              .append(timeout)
              .append(endpointClosed ? " (the endpoint was closed meanwhile)" : "")
              .append("; outstanding: ");
      for (int i = 0; i < late.size(); i++) {
        UcxBatch b = late.get(i);
        sb.append(i == 0 ? "" : ", ")
            .append("peer '")
            .append(b.session())
            .append("' (")
            .append(b.len.length)
            .append(" reads, ")
            .append(b.bytes)
            .append(" bytes; ")
            .append(b.phase())
            .append(')');
      }
      TransportTimeoutException e =
          new TransportTimeoutException(
              late.getFirst().session(),
              sb.append("; their endpoints were closed and reconnect on the next read").toString());
      for (UcxBatch b : failed) {
        e.addSuppressed(b.failure());
      }
      throw e;
    }
    TransportException e = failed.getFirst().failure();
    for (UcxBatch b : failed.subList(1, failed.size())) {
      e.addSuppressed(b.failure());
    }
    throw e;
  }

  private TransportException failure() {
    return new TransportException(
        session(),
        "ucx transport: peer '"
            + session()
            + "' failed with "
            + len.length
            + " reads ("
            + bytes
            + " bytes) outstanding ("
            + phase()
            + "): "
            + failure);
  }
}
