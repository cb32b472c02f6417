package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/**
 * The suite over what production runs with {@code --transport auto} on one host: a routing endpoint
 * over shm and ucx on both sides (peers on this host are routed to shm).
 */
class RoutingShmUcxConformanceTest extends AbstractTransportConformanceTest {
  @Override
  protected Transport newTransport(String session) {
    return ShmUcxEndpoints.routing(session);
  }

  /** The child publisher opens {@code auto} too: a routing endpoint over every transport. */
  @Override
  protected String peerTransportName() {
    return "auto";
  }
}
