package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;
import org.junit.jupiter.api.BeforeAll;

/**
 * The conformance suite against a real NIXL, when {@code MX_NIXL_LIBRARY} (or {@code
 * -Dmx.nixl.library}) points at one; otherwise the class is skipped with the cause printed ({@code
 * -Dmx.test.requireNative=true} fails).
 */
class NixlRealConformanceTest extends AbstractTransportConformanceTest {

  @BeforeAll
  static void realNixl() {
    NixlDouble.requireRealNixl();
  }

  /**
   * A real NIXL over UCX's shared-memory, CMA and TCP transports keeps serving deregistered memory
   * (checked against NIXL 1.4 on UCX 1.20); over RDMA it may fail the read, which a "no" accepts.
   */
  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior != TransportBehavior.REVOKES_DEREGISTERED_MEMORY && behavior.defaultValue();
  }

  @Override
  protected Transport newTransport(String session) {
    return new NixlTransportProvider().create(TransportConfig.of(session));
  }
}
