package dev.mx.transport.shm;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;

/**
 * Provides the {@code shm} transport on Linux; priority 9, above {@code ucx}, since on one host it
 * moves bytes at memory speed. It reaches only peers on this host ({@link #hostLocal()}), so
 * routing keeps ucx as the primary.
 */
@Stable
public final class ShmTransportProvider extends TransportProvider {

  @Override
  public String name() {
    return "shm";
  }

  @Override
  public boolean isAvailable() {
    return Shm.isAvailable();
  }

  @Override
  public Throwable unavailabilityCause() {
    return Shm.unavailabilityCause();
  }

  @Override
  public int priority() {
    return 9;
  }

  @Override
  public boolean hostLocal() {
    return true;
  }

  @Override
  public Transport create(TransportConfig config) {
    Shm.ensureAvailability();
    return new ShmTransport(config);
  }
}
