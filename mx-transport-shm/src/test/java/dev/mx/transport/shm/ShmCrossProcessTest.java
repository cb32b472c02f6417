package dev.mx.transport.shm;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractCrossProcessTest;
import java.time.Duration;

/**
 * The cross-process suite over shm: a child JVM publishes 256 MiB (three regions of its own memory,
 * read by cross-memory attach, and one shared file from {@code allocate}), this one reads it
 * byte-exact.
 */
class ShmCrossProcessTest extends AbstractCrossProcessTest {

  @Override
  protected String publisherTransport() {
    return "shm";
  }

  @Override
  protected boolean isAvailable() {
    return Shm.isAvailable();
  }

  @Override
  protected void assumeAvailable() {
    ShmTestSupport.assumeShm();
  }

  @Override
  protected Transport newReceiver(String session, Duration timeout) {
    return new ShmTransportProvider().create(TransportConfig.of(session).withTimeout(timeout));
  }
}
