package dev.mx.transport.nixl;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractCrossProcessTest;
import java.time.Duration;

/**
 * The cross-process suite through a real NIXL: a child JVM publishes 256 MiB with its own agent and
 * this one reads it byte-exact (skipped with the cause where no real NIXL is built).
 */
class NixlCrossProcessTest extends AbstractCrossProcessTest {

  @Override
  protected String publisherTransport() {
    return "nixl";
  }

  @Override
  protected boolean isAvailable() {
    return NixlDouble.whyNoRealNixl() == null;
  }

  @Override
  protected void assumeAvailable() {
    NixlDouble.requireRealNixl();
  }

  @Override
  protected Transport newReceiver(String session, Duration timeout) {
    return new NixlTransportProvider().create(TransportConfig.of(session).withTimeout(timeout));
  }
}
