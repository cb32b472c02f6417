package dev.mx.transport.nixl;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;

/**
 * Provides the {@code nixl} transport when {@link Nixl} finds a real {@code libnixl_capi.so};
 * priority 9, above {@code ucx} (8): where NIXL is installed it is what ModelExpress deployments
 * speak.
 */
@Stable
public final class NixlTransportProvider extends TransportProvider {

  @Override
  public String name() {
    return "nixl";
  }

  @Override
  public boolean isAvailable() {
    return Nixl.isAvailable();
  }

  @Override
  public Throwable unavailabilityCause() {
    return Nixl.unavailabilityCause();
  }

  @Override
  public int priority() {
    return 9;
  }

  @Override
  public Transport create(TransportConfig config) {
    Nixl.ensureAvailability();
    return new NixlTransport(config);
  }
}
