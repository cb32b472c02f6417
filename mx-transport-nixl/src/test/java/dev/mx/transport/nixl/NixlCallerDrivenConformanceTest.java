package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;

/**
 * The conformance suite over the test double with progress driven by the waiting caller ({@code
 * nixl.progressThread=false}), and transfers that stay in progress for a few polls.
 */
class NixlCallerDrivenConformanceTest extends AbstractTransportConformanceTest {

  @BeforeEach
  void slowTransfers() {
    NixlDouble.reset();
    NixlDouble.set("in_prog_polls", 3);
  }

  @Override
  protected Transport newTransport(String session) {
    return NixlDouble.transport(session, Map.of("nixl.progressThread", "false"));
  }

  /**
   * The peer process finds the double the way a user finds NIXL: through {@code mx.nixl.library}.
   */
  @Override
  protected java.util.List<String> peerJvmArguments() {
    return java.util.List.of("-Dmx.nixl.library=" + NixlDouble.path("mx.nixl.test.double"));
  }
}
