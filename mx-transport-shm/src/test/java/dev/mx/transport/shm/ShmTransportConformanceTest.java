package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;

/**
 * The conformance suite over the {@code shm} transport (callers' registered memory: cross-memory
 * attach; memory it allocated: mapped and copied by the caller's CPU, through landing folds).
 */
class ShmTransportConformanceTest extends AbstractTransportConformanceTest {

  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior == TransportBehavior.FOLDS_CPU_COPIES || behavior.defaultValue();
  }

  @Override
  protected Transport newTransport(String session) {
    ShmTestSupport.assumeShm();
    return new ShmTransportProvider().create(TransportConfig.of(session));
  }
}
