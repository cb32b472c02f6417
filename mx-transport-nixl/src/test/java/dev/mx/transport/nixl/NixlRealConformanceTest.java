package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
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

  @Override
  protected Transport newTransport(String session) {
    return new NixlTransportProvider().create(TransportConfig.of(session));
  }
}
