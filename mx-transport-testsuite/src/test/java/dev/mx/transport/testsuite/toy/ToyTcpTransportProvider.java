package dev.mx.transport.testsuite.toy;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;

/** Finds {@link ToyTcpTransport} by name, so the suite's publisher process can start one. */
public final class ToyTcpTransportProvider extends TransportProvider {
  @Override
  public String name() {
    return ToyTcpTransport.NAME;
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public Transport create(TransportConfig config) {
    return new ToyTcpTransport(config);
  }
}
