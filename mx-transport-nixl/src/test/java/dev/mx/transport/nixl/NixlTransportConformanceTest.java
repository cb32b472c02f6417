package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import org.junit.jupiter.api.BeforeEach;

/**
 * The conformance suite over the test double of NIXL's C ABI, with NIXL's progress thread (the
 * default).
 */
class NixlTransportConformanceTest extends AbstractTransportConformanceTest {

  @BeforeEach
  void resetDouble() {
    NixlDouble.reset();
  }

  @Override
  protected Transport newTransport(String session) {
    return NixlDouble.transport(session);
  }

  /**
   * The peer process finds the double the way a user finds NIXL: through {@code mx.nixl.library}.
   */
  @Override
  protected java.util.List<String> peerJvmArguments() {
    return java.util.List.of("-Dmx.nixl.library=" + NixlDouble.path("mx.nixl.test.double"));
  }
}
