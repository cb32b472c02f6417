package dev.mx.transport.ucx;

import dev.mx.transport.kit.RegionTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An endpoint's connected peers by session, and the closing of their UCX endpoints. Kept apart from
 * the endpoint so that peers and connections depend on the worker loop only, not on the transport
 * object: connecting again retires the peer it replaces once no batch uses it, and the endpoint's
 * close closes them all with one shared deadline.
 */
final class UcxPeers {
  private static final Logger LOG = LoggerFactory.getLogger(UcxPeers.class);

  /** How long a graceful endpoint close may take before it is abandoned. */
  private static final long CLOSE_WAIT_NANOS = 2_000_000_000L;

  /** What the peers and their connections use of the endpoint. */
  private final UcxLocal local;

  private final UcxWorkerLoop loop;
  private final ReentrantLock workerLock;

  /** Throws when the endpoint was closed. */
  private final Runnable ensureOpen;

  private final Map<String, UcxPeer> bySession = new ConcurrentHashMap<>();

  /**
   * The peers of endpoint {@code session}, connected through {@code worker} (progressed by {@code
   * loop}), with UCX's peer error handling when {@code peerErrorHandling}.
   */
  UcxPeers(
      String session,
      UcpWorker worker,
      boolean peerErrorHandling,
      UcxWorkerLoop loop,
      Runnable ensureOpen) {
    this.local = new UcxLocal(session, worker, peerErrorHandling, this::awaitClosed);
    this.loop = loop;
    this.workerLock = loop.lock();
    this.ensureOpen = ensureOpen;
  }

  /** Connects {@code session} from its decoded metadata, retiring the peer it replaces. */
  void connect(String session, UcxPeerMetadata meta, RegionTable regions) {
    UcxPeer peer = new UcxPeer(local, session, meta, regions);
    workerLock.lock();
    try {
      ensureOpen.run();
      peer.open();
      UcxPeer old = bySession.put(session, peer);
      if (old != null) {
        old.retire();
      }
    } finally {
      workerLock.unlock();
    }
  }

  boolean contains(String session) {
    return bySession.containsKey(session);
  }

  /** The peer connected under {@code session}, or null. */
  UcxPeer get(String session) {
    return bySession.get(session);
  }

  int size() {
    return bySession.size();
  }

  /**
   * Progresses until every close request completed or {@link #CLOSE_WAIT_NANOS} passed; endpoints
   * still closing then are abandoned (the worker's destruction reclaims them). Worker lock held.
   */
  void awaitClosed(List<UcxConnection> connections, UcpRequest... requests) {
    long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
    for (int i = 0; i < requests.length; i++) {
      while (requests[i] != null && !requests[i].isCompleted() && System.nanoTime() < deadline) {
        loop.progressLocked();
      }
      if (requests[i] != null && !requests[i].isCompleted()) {
        LOG.warn(
            "ucx endpoint to peer '{}' did not close within {} ms; abandoning it",
            connections.get(i).peer.session,
            CLOSE_WAIT_NANOS / 1_000_000);
      }
    }
  }

  /** Closes every peer's endpoint, all at once, and forgets the peers. Worker lock held. */
  void closeAll() {
    List<UcxConnection> closing = new ArrayList<>();
    List<UcpRequest> requests = new ArrayList<>();
    for (UcxPeer p : bySession.values()) {
      if (p.connection != null) {
        closing.add(p.connection);
        requests.add(p.connection.beginClose(false));
        p.connection = null;
      }
    }
    bySession.clear();
    awaitClosed(closing, requests.toArray(UcpRequest[]::new));
  }
}
