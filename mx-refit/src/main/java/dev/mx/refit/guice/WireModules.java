package dev.mx.refit.guice;

import com.google.inject.Module;
import dev.mx.api.refit.WirePolicy;
import dev.mx.refit.ReceiverConfig;

/** Chooses the wire-policy strategy module from {@code mx.receiver.wire}. */
public final class WireModules {
  private WireModules() {}

  /**
   * {@code fused} → {@link FusedWireModule}, {@code phased} → {@link PhasedWireModule}, anything else is
   * loaded as the fully qualified name of a {@link WirePolicy} class → {@link CustomWireModule}.
   *
   * @throws IllegalArgumentException when the class is missing or is no {@link WirePolicy}
   */
  public static Module forConfig(ReceiverConfig config) {
    return switch (config.wire()) {
      case ReceiverConfig.FUSED -> new FusedWireModule();
      case ReceiverConfig.PHASED -> new PhasedWireModule();
      default -> new CustomWireModule(loadPolicy(config.wire()));
    };
  }

  private static Class<? extends WirePolicy> loadPolicy(String className) {
    Class<?> c;
    try {
      ClassLoader loader = Thread.currentThread().getContextClassLoader();
      c = Class.forName(className, false, loader != null ? loader : WireModules.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException(ReceiverConfig.WIRE + "='" + className
          + "' is neither fused, phased nor a class on the class path", e);
    }
    if (!WirePolicy.class.isAssignableFrom(c)) {
      throw new IllegalArgumentException(ReceiverConfig.WIRE + "='" + className + "' names a class that does not"
          + " implement " + WirePolicy.class.getName());
    }
    return c.asSubclass(WirePolicy.class);
  }
}
