package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/**
 * A mixed pair the other way: a publisher with ucx only read by a routing receiver (shm and ucx),
 * which finds no shm entry in its metadata and reads over ucx.
 */
class UcxPublisherReadByRoutingConformanceTest extends AbstractTransportConformanceTest {
  @Override
  protected Transport newTransport(String session) {
    return ShmUcxEndpoints.routing(session);
  }

  @Override
  protected Transport newPublisher(String session) {
    return ShmUcxEndpoints.ucx(session);
  }

  @Override
  protected String peerTransportName() {
    return "ucx";
  }
}
