package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;

/**
 * The conformance suite over the {@code shm} transport (callers' registered memory: cross-memory
 * attach).
 */
class ShmTransportConformanceTest extends AbstractTransportConformanceTest {

  @Override
  protected Transport newTransport(String session) {
    ShmTestSupport.assumeShm();
    return new ShmTransportProvider().create(TransportConfig.of(session));
  }
}
