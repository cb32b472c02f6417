package dev.mx.transport.testsuite.toy;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/** The conformance suite over the toy loopback TCP transport: every default behaviour, yes. */
class ToyTcpTransportConformanceTest extends AbstractTransportConformanceTest {
  @Override
  protected Transport newTransport(String session) {
    return new ToyTcpTransport.Provider().create(TransportConfig.of(session));
  }
}
