package dev.mx.transport.ucx;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.PendingRead;
import dev.mx.transport.kit.LocalCopy;
import java.lang.foreign.Arena;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.openucx.jucx.ucp.UcpEndpoint;

/**
 * Moves an endpoint's prepared batches: issues each one's probe, waits for every peer's answers,
 * issues the data requests and waits for the bytes, progressing the worker meanwhile. Kept apart
 * from the endpoint so the read path depends only on the worker loop, the endpoint's open state and
 * the table of batches the serving side dispatches replies to.
 */
final class UcxReads {
  /**
   * While issuing, progress the worker once per this many requests, so the peer starts serving
   * early.
   */
  private static final int PROGRESS_EVERY_REQUESTS = 64;

  /** ... or once per this many bytes requested. */
  private static final long PROGRESS_EVERY_BYTES = 8L << 20;

  /**
   * Longest single sleep on the event fd while a call waits (bounds the cost of a missed wake-up).
   */
  private static final long MAX_SLEEP_NANOS = 2_000_000;

  private final UcxWorkerLoop loop;
  private final ReentrantLock workerLock;

  /** Throws when the endpoint was closed. */
  private final Runnable ensureOpen;

  /** Whether the endpoint was closed. */
  private final BooleanSupplier closed;

  /** Batches waiting for their peer's replies, by token ({@link UcxServe}). */
  private final Map<Long, UcxBatch> awaiting;

  private final AtomicLong nextToken = new AtomicLong(1);

  /**
   * Reads progressed by {@code loop}, registering waiting batches in {@code awaiting} (the table
   * the endpoint's {@link UcxServe} dispatches replies to).
   */
  UcxReads(
      UcxWorkerLoop loop,
      Runnable ensureOpen,
      BooleanSupplier closed,
      Map<Long, UcxBatch> awaiting) {
    this.loop = loop;
    this.workerLock = loop.lock();
    this.ensureOpen = ensureOpen;
    this.closed = closed;
    this.awaiting = awaiting;
  }

  /**
   * Connects (if needed) and issues the batch's probe: one request per region the batch reads,
   * which the peer answers saying whether the region is still registered.
   */
  void start(UcxBatch b) {
    workerLock.lock();
    try {
      ensureOpen.run();
      UcxConnection c = b.peer.acquire();
      b.connection = c;
      try {
        if (c.failure != null) {
          throw new IllegalStateException(c.failure);
        }
        int regions = 0;
        for (boolean used : b.regionUsed) {
          regions += used ? 1 : 0;
        }
        b.token = nextToken.getAndIncrement();
        b.headers = Arena.ofAuto().allocate((long) regions * UcxServe.REQUEST_BYTES, 8);
        b.probe = new UcxBatch.Flush(regions);
        awaiting.put(b.token, b);
        int i = 0;
        for (int r = 0; r < b.regionUsed.length; r++) {
          if (b.regionUsed[r]) {
            UcxPeerMetadata.Region region = b.peer.meta.regions().get(r);
            UcxServe.writeRequest(
                b.headers,
                i,
                b.token,
                -1 - r,
                region.slot(),
                region.cookie(),
                region.base(),
                region.length());
            UcxServe.send(c.endpoint, b.headers, i++);
          }
        }
      } catch (RuntimeException e) {
        String why = "starting reads failed: " + e.getMessage();
        b.peer.breakConnection(c, why);
        finish(b);
        throw new TransportException(
            b.session(), "ucx transport: peer '" + b.session() + "': " + why, e);
      }
    } finally {
      workerLock.unlock();
    }
  }

  /**
   * Waits for every probe, rejects the whole call (before any data moves) when a peer failed or a
   * region was deregistered, copies local batches, sends every peer's data requests, and waits for
   * them; all within {@code timeout}.
   */
  void await(List<PendingRead> started, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<UcxBatch> remote = new ArrayList<>(started.size());
    List<LocalCopy> locals = new ArrayList<>();
    for (PendingRead p : started) {
      if (p instanceof UcxBatch b) {
        remote.add(b);
      } else {
        locals.add((LocalCopy) p);
      }
    }
    try {
      waitForPhase(remote, deadline);
      UcxBatch.throwIfFailed(remote, timeout, workerLock, closed.getAsBoolean());
      for (UcxBatch b : remote) {
        b.checkStillPublished();
      }
      for (LocalCopy b : locals) {
        b.copy();
      }
      for (UcxBatch b : remote) {
        issueData(b);
      }
      waitForPhase(remote, deadline);
      UcxBatch.throwIfFailed(remote, timeout, workerLock, closed.getAsBoolean());
    } finally {
      finishAll(remote);
    }
  }

  /** Issues one read request per descriptor of the batch; the peer answers each with its bytes. */
  private void issueData(UcxBatch b) {
    workerLock.lock();
    try {
      ensureOpen.run();
      UcxConnection c = b.connection;
      b.data = new UcxBatch.Flush(b.len.length);
      try {
        if (c.failure != null || c.closed) {
          throw new IllegalStateException(
              c.failure != null ? c.failure : "its endpoint was closed");
        }
        UcpEndpoint ep = c.endpoint;
        b.headers = Arena.ofAuto().allocate((long) b.len.length * UcxServe.REQUEST_BYTES, 8);
        long sinceProgress = 0;
        for (int i = 0; i < b.len.length; i++) {
          int r = b.region[i];
          UcxServe.writeRequest(
              b.headers, i, b.token, i, b.peer.slots[r], b.peer.cookies[r], b.src[i], b.len[i]);
          UcxServe.send(ep, b.headers, i);
          sinceProgress += b.len[i];
          if ((i + 1) % PROGRESS_EVERY_REQUESTS == 0 || sinceProgress >= PROGRESS_EVERY_BYTES) {
            loop.progressLocked();
            sinceProgress = 0;
          }
        }
      } catch (RuntimeException e) {
        b.data.fail("issuing " + b.len.length + " reads failed: " + e.getMessage());
      }
    } finally {
      workerLock.unlock();
    }
  }

  /**
   * Progresses the worker until every batch's current phase finished or the deadline passed,
   * sleeping on the worker's event fd whenever a spell of progress calls found nothing to do.
   */
  private void waitForPhase(List<UcxBatch> batches, long deadline) {
    if (batches.isEmpty()) {
      return;
    }
    loop.enterCaller();
    try {
      long idleSince = -1;
      while (true) {
        boolean progressed = loop.progress(16);
        workerLock.lock();
        try {
          for (UcxBatch b : batches) {
            b.pollReceives();
          }
        } finally {
          workerLock.unlock();
        }
        boolean allDone = true;
        for (UcxBatch b : batches) {
          allDone &= b.settled();
        }
        long now = System.nanoTime();
        long left = deadline - now;
        if (allDone || left <= 0 || closed.getAsBoolean()) {
          return;
        }
        if (progressed) {
          idleSince = -1;
        } else if (idleSince < 0 || now - idleSince < UcxWorkerLoop.SPIN_NANOS) {
          idleSince = idleSince < 0 ? now : idleSince;
          Thread.onSpinWait();
        } else {
          loop.waitForEvents(Duration.ofNanos(Math.min(left, MAX_SLEEP_NANOS)));
          idleSince = -1;
        }
      }
    } finally {
      loop.exitCaller();
    }
  }

  /** Releases every batch's connection and probe memory. */
  private void finishAll(List<UcxBatch> batches) {
    workerLock.lock();
    try {
      for (UcxBatch b : batches) {
        if (!b.settled()) {
          // Still outstanding (the call is failing for another reason): nothing may land later.
          b.peer.breakConnection(b.connection, "the read was abandoned");
        }
        finish(b);
      }
    } finally {
      workerLock.unlock();
    }
  }

  /** Stops dispatching replies to the batch and releases its connection. Lock held. */
  private void finish(UcxBatch b) {
    awaiting.remove(b.token);
    if (b.connection != null) {
      b.connection.release();
      b.connection = null;
    }
  }
}
