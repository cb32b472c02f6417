package dev.mx.transport.mem;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;

/** Provides the {@code mem} transport: always available, priority 0 (the last resort). */
@Stable
public final class MemTransportProvider extends TransportProvider {

  @Override
  public String name() {
    return "mem";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public int priority() {
    return 0;
  }

  @Override
  public Transport create(TransportConfig config) {
    return new MemTransport(config);
  }
}
