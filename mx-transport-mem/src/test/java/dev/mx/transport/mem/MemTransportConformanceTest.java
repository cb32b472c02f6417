package dev.mx.transport.mem;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/** The conformance suite over the {@code mem} transport. */
class MemTransportConformanceTest extends AbstractTransportConformanceTest {

  @Override
  protected Transport newTransport(String session) {
    return new MemTransportProvider().create(TransportConfig.of(session));
  }
}
