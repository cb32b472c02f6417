package dev.mx.it.layout;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.version.VersionFollower;
import java.time.Duration;
import java.util.Map;

/**
 * A receiver JVM for {@link VersionFaultsAcrossProcessesTest}: inference rank 0 of tp=1 follows the
 * versions of {@code args[1]} on store {@code args[0]} over UCX with lease TTL {@code args[2]} ms,
 * reads the first one and, inside its install (so with the lease held and renewed), prints
 * {@code @holding <version>} and waits to be killed.
 */
public final class LeaseHoldingReceiver {
  private LeaseHoldingReceiver() {}

  public static void main(String[] args) throws Exception {
    TransportProvider ucx = TransportProvider.registry().select("ucx");
    try (MetadataStore store = MetadataStores.open(args[0]);
        Transport t =
            ucx.create(new TransportConfig("receiver-held", Duration.ofSeconds(30), Map.of()))) {
      VersionFollower f =
          VersionJvms.follower(
              store,
              args[1],
              t,
              "receiver-0",
              0,
              1,
              (step, buffers) -> {
                System.out.println("@holding step-" + step);
                System.out.flush();
                try {
                  Thread.sleep(Long.MAX_VALUE);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              Duration.ofMillis(Long.parseLong(args[2])),
              d -> d);
      f.next(Duration.ofSeconds(120));
    }
  }
}
