package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/**
 * A mixed pair: a publisher serving shm and ucx (a routing endpoint, handing out a bundle) read by
 * a receiver that has ucx only, which takes the bundle's ucx entry.
 */
class ShmUcxPublisherReadOverUcxConformanceTest extends AbstractTransportConformanceTest {
  @Override
  protected Transport newTransport(String session) {
    return ShmUcxEndpoints.ucx(session);
  }

  @Override
  protected Transport newPublisher(String session) {
    return ShmUcxEndpoints.routing(session);
  }

  @Override
  protected String peerTransportName() {
    return "auto";
  }
}
