package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;

/**
 * The conformance suite over the test double with progress driven by the waiting caller ({@code
 * nixl.progressThread=false}), and transfers that stay in progress for a few polls. The double
 * fails reads of deregistered memory here, as RDMA hardware does: the transport still declares that
 * it does not revoke, and the suite accepts either outcome of a "no".
 */
class NixlCallerDrivenConformanceTest extends AbstractTransportConformanceTest {

  @BeforeEach
  void slowTransfers() {
    NixlDouble.reset();
    NixlDouble.set("in_prog_polls", 3);
  }

  /** NIXL cannot promise that deregistered memory stops being served. */
  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior != TransportBehavior.REVOKES_DEREGISTERED_MEMORY && behavior.defaultValue();
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
