package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;
import org.junit.jupiter.api.BeforeEach;

/**
 * The conformance suite over the test double of NIXL's C ABI, with NIXL's progress thread (the
 * default). The double keeps serving deregistered memory here, as a real NIXL over this machine's
 * UCX transports does; {@link NixlCallerDrivenConformanceTest} runs it revoking, as on RDMA.
 */
class NixlTransportConformanceTest extends AbstractTransportConformanceTest {

  @BeforeEach
  void resetDouble() {
    NixlDouble.reset();
    NixlDouble.set("serve_deregistered", 1);
  }

  /** NIXL cannot promise that deregistered memory stops being served. */
  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return behavior != TransportBehavior.REVOKES_DEREGISTERED_MEMORY && behavior.defaultValue();
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
