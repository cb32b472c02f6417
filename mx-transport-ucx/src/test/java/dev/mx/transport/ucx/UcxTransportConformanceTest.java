package dev.mx.transport.ucx;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import org.junit.jupiter.api.BeforeAll;

/** The conformance suite over UCX: two endpoints (two UCX contexts and workers) in one JVM. */
class UcxTransportConformanceTest extends AbstractTransportConformanceTest {

  /**
   * Skips the whole class: skipping in each test's set-up would be counted per test, but the
   * suite's tear-down then fails on the endpoints that set-up never opened.
   */
  @BeforeAll
  static void ucxIsAvailable() {
    UcxTestSupport.requireUcx();
  }

  @Override
  protected Transport newTransport(String session) {
    return new UcxTransportProvider().create(TransportConfig.of(session));
  }
}
