package dev.mx.refit.guice;

import com.google.inject.Module;
import dev.mx.api.annotation.Stable;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.wire.WirePolicies;

/** Chooses the wire-policy strategy module from {@code mx.receiver.wire}. */
@Stable
public final class WireModules {
  private WireModules() {}

  /**
   * {@code fused} → {@link FusedWireModule}, {@code phased} → {@link PhasedWireModule}, anything
   * else is the fully qualified name of a {@link dev.mx.api.refit.WirePolicy} class → {@link
   * CustomWireModule}.
   *
   * @throws IllegalArgumentException when the class is missing or is no wire policy
   */
  public static Module forConfig(ReceiverConfig config) {
    return switch (config.wire()) {
      case ReceiverConfig.FUSED -> new FusedWireModule();
      case ReceiverConfig.PHASED -> new PhasedWireModule();
      default -> new CustomWireModule(WirePolicies.policyClass(config.wire()));
    };
  }
}
