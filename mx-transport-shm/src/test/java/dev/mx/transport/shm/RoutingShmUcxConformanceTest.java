package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;

/**
 * The suite over what production runs with {@code --transport auto} on one host: a routing endpoint
 * over shm and ucx on both sides (peers on this host are routed to shm).
 */
class RoutingShmUcxConformanceTest extends AbstractTransportConformanceTest {

  /** Routed to shm, whose mapped reads are the caller's CPU copies. */
  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior == TransportBehavior.FOLDS_CPU_COPIES || behavior.defaultValue();
  }

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
