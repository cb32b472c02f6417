package dev.mx.refit.version;

import dev.mx.api.refit.Capture;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Settings;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import java.util.Map;

/**
 * The receivers this package's followers make: one capture, no settings, fresh digests each step.
 */
final class TestReceivers {
  private TestReceivers() {}

  /**
   * Receivers over {@code transport} that install what {@code capture} records, as {@code config}.
   */
  static VersionFollower.ReceiverFactory of(
      Transport transport, Capture capture, ReceiverConfig config) {
    return (discovery, installer) ->
        Receiver.builder()
            .config(config)
            .settings(Settings.of(Map.of(), Map.of()))
            .transport(transport)
            .discovery(discovery)
            .geometry(m -> capture)
            .installer(installer)
            .rediscoverEachStep(true)
            .build();
  }
}
