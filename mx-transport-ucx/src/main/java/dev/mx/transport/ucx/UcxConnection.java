package dev.mx.transport.ucx;

import java.util.List;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** One UCX endpoint to a peer. Guarded by the worker lock. */
final class UcxConnection {
  private static final Logger LOG = LoggerFactory.getLogger(UcxConnection.class);
  private final UcxLocal local;
  final UcxPeer peer;
  UcpEndpoint endpoint;

  /** UCX's description of the failure once the endpoint failed (set from the error callback). */
  volatile String failure;

  int inFlight;
  boolean closeWhenIdle;
  boolean closed;

  UcxConnection(UcxLocal local, UcxPeer peer) {
    this.local = local;
    this.peer = peer;
  }

  void fail(int status, String message) {
    if (failure == null) {
      failure = message + " (UCS status " + status + ")";
      LOG.debug("ucx endpoint {} lost peer {}: {}", local.session(), peer.session, failure);
    }
  }

  void release() {
    inFlight--;
    releaseIfIdle();
  }

  void releaseIfIdle() {
    if (closeWhenIdle && inFlight == 0) {
      close(false);
    }
  }

  /** Closes the endpoint (flushing unless forced or failed) and waits. Worker lock held. */
  void close(boolean force) {
    local.closing().awaitClosed(List.of(this), beginClose(force));
  }

  /**
   * Starts closing the endpoint; returns the close request, or null when there is nothing to wait
   * for. Worker lock held.
   */
  UcpRequest beginClose(boolean force) {
    if (closed) {
      return null;
    }
    closed = true;
    if (endpoint == null) {
      return null;
    }
    try {
      return force || failure != null
          ? endpoint.closeNonBlockingForce()
          : endpoint.closeNonBlockingFlush();
    } catch (RuntimeException e) {
      LOG.debug("closing the ucx endpoint to peer '{}': {}", peer.session, e.toString());
      return null;
    }
  }
}
