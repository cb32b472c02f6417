package dev.mx.transport.ucx;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;

/**
 * Provides the {@code ucx} transport when {@link Ucx} finds libucp and jucx usable; priority 8
 * (above {@code mem}).
 */
@Stable
public final class UcxTransportProvider extends TransportProvider {

  @Override
  public String name() {
    return "ucx";
  }

  @Override
  public boolean isAvailable() {
    return Ucx.isAvailable();
  }

  @Override
  public Throwable unavailabilityCause() {
    return Ucx.unavailabilityCause();
  }

  @Override
  public int priority() {
    return 8;
  }

  @Override
  public Transport create(TransportConfig config) {
    Ucx.ensureAvailability();
    return new UcxTransport(config);
  }
}
