package dev.mx.api.transport;

import dev.mx.api.spi.MxProvider;

/**
 * Creates {@link Transport} endpoints of one backend; found through {@link
 * java.util.ServiceLoader}. Select one with {@code -Dmx.transport=NAME} or {@code
 * MX_TRANSPORT=NAME}.
 */
public abstract class TransportProvider extends MxProvider {

  /** The system property that overrides the choice of transport. */
  public static final String PROPERTY = "mx.transport";

  /** The environment variable that overrides it when the property is unset. */
  public static final String ENV = "MX_TRANSPORT";

  /**
   * Creates an endpoint. Call only when {@link #isAvailable()}; otherwise this throws an error
   * carrying {@link #unavailabilityCause()}.
   */
  public abstract Transport create(TransportConfig config);

  /**
   * Whether this transport reaches only peers on the same host (e.g. {@code shm}). The backend
   * kit's {@code RoutingTransport} never makes such a transport its primary, so the blob
   * single-transport and cross-host readers see ({@code agent_meta_b64}) is one they can use.
   */
  public boolean hostLocal() {
    return false;
  }

  @Override
  public String artifact() {
    return "dev.mx:mx-transport-" + name();
  }

  /** The registry of transports on the class path, honouring the override. */
  public static dev.mx.api.spi.ProviderRegistry<TransportProvider> registry() {
    return dev.mx.api.spi.ProviderRegistry.load(
        TransportProvider.class, "transport", PROPERTY, ENV);
  }
}
