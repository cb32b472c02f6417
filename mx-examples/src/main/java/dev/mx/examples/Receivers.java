package dev.mx.examples;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.embed.StoreDiscovery;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The inference side of both examples: one {@link Receiver} per TP rank, resharding what the
 * trainers publish.
 */
final class Receivers {
  private Receivers() {}

  /** Refits inference rank {@code r} once and returns its installed parameters as floats. */
  static Map<String, float[]> refit(
      TransportProvider transports, MetadataStore store, String identity, int r) {
    Map<String, float[]> installed = new LinkedHashMap<>();
    try (Transport transport = transports.create(TransportConfig.of("inference-" + r));
        Receiver receiver =
            Receiver.builder()
                .config(ReceiverConfig.defaults().withRank(r).withTimeout(Duration.ofSeconds(60)))
                .transport(transport)
                .discovery(StoreDiscovery.of(store, identity, ExampleModel.TRAINER_TP))
                .geometry(ExampleModel.receiverGeometry(r))
                .installer(
                    (step, buffers) ->
                        buffers.forEach(
                            (name, bytes) ->
                                installed.put(name, bytes.toArray(ValueLayout.JAVA_FLOAT))))
                .build()) {
      receiver.updateWeights(0); // discover, plan, read, re-slice, verify digests, install
    }
    return installed;
  }
}
