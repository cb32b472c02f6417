package dev.mx.api.transport;

import dev.mx.api.spi.MxProvider;

/**
 * Creates {@link Transport} endpoints of one backend; found through {@link java.util.ServiceLoader}.
 * Select one with {@code -Dmx.transport=NAME} or {@code MX_TRANSPORT=NAME}.
 */
public abstract class TransportProvider extends MxProvider {

  /** The system property that overrides the choice of transport. */
  public static final String PROPERTY = "mx.transport";
  /** The environment variable that overrides it when the property is unset. */
  public static final String ENV = "MX_TRANSPORT";

  /**
   * Creates an endpoint. Call only when {@link #isAvailable()}; otherwise this throws an error carrying
   * {@link #unavailabilityCause()}.
   */
  public abstract Transport create(TransportConfig config);

  @Override
  public String artifact() {
    return "dev.mx:mx-transport-" + name();
  }

  /** The registry of transports on the class path, honouring the override. */
  public static dev.mx.api.spi.ProviderRegistry<TransportProvider> registry() {
    return dev.mx.api.spi.ProviderRegistry.load(TransportProvider.class, "transport", PROPERTY, ENV);
  }
}
