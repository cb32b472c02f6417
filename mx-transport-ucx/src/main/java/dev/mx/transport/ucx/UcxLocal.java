package dev.mx.transport.ucx;

import java.util.List;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpWorker;

/**
 * What a peer and its connections need of their endpoint, handed to them so that they hold no
 * reference to the transport object: its session (for endpoint names and logs), its worker (use it
 * holding the worker lock), whether UCX reports peer failures, and how to wait for endpoints to
 * close.
 */
record UcxLocal(String session, UcpWorker worker, boolean peerErrorHandling, Closing closing) {

  /** Progresses the worker until the close requests completed or the wait ran out. */
  interface Closing {
    void awaitClosed(List<UcxConnection> connections, UcpRequest... requests);
  }
}
