package dev.mx.transport.ucx;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractCrossProcessTest;
import java.time.Duration;

/**
 * The cross-process suite over ucx: a child JVM publishes 256 MiB, this one reads it byte-exact.
 */
class UcxCrossProcessTest extends AbstractCrossProcessTest {

  @Override
  protected String publisherTransport() {
    return "ucx";
  }

  @Override
  protected boolean isAvailable() {
    return Ucx.isAvailable();
  }

  @Override
  protected void assumeAvailable() {
    UcxTestSupport.requireUcx();
  }

  @Override
  protected Transport newReceiver(String session, Duration timeout) {
    return new UcxTransportProvider().create(TransportConfig.of(session).withTimeout(timeout));
  }
}
