package dev.mx.transport.mem;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import dev.mx.transport.testsuite.TransportBehavior;

/** The conformance suite over the {@code mem} transport. */
class MemTransportConformanceTest extends AbstractTransportConformanceTest {

  /** mem reaches memory of its own JVM only, and copies it with the caller's CPU. */
  @Override
  protected boolean hasBehavior(TransportBehavior behavior) {
    return switch (behavior) {
      case SUPPORTS_PEERS_IN_OTHER_PROCESSES -> false;
      case FOLDS_CPU_COPIES -> true;
      default -> behavior.defaultValue();
    };
  }

  @Override
  protected Transport newTransport(String session) {
    return new MemTransportProvider().create(TransportConfig.of(session));
  }
}
