package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.kit.RoutingTransport;
import dev.mx.transport.ucx.Ucx;
import dev.mx.transport.ucx.UcxTransportProvider;
import java.time.Duration;
import java.util.List;

/**
 * The endpoints the routing tests pair: what {@code --transport auto} opens on a host with shm and
 * ucx (a {@link RoutingTransport} over both, ucx primary), and ucx alone.
 */
final class ShmUcxEndpoints {
  static final Duration TIMEOUT = Duration.ofSeconds(60);

  private ShmUcxEndpoints() {}

  /** Skips (printing why; fails under {@code -Dmx.test.requireNative=true}) without both. */
  static void assumeShmAndUcx() {
    ShmTestSupport.assumeShm();
    if (!Ucx.isAvailable()) {
      String why = "UCX is unavailable: " + Ucx.unavailabilityCause();
      if (Boolean.getBoolean("mx.test.requireNative")) {
        throw new AssertionError(why);
      }
      System.out.println("skipping: " + why);
    }
    assumeTrue(Ucx.isAvailable(), () -> "UCX is unavailable: " + Ucx.unavailabilityCause());
  }

  static Transport routing(String session) {
    assumeShmAndUcx();
    Transport shm =
        new ShmTransportProvider().create(TransportConfig.of(session).withTimeout(TIMEOUT));
    Transport ucx = ucx(session);
    return new RoutingTransport(
        TransportConfig.of(session).withTimeout(TIMEOUT), List.of(shm, ucx), 1);
  }

  static Transport ucx(String session) {
    assumeShmAndUcx();
    return new UcxTransportProvider().create(TransportConfig.of(session).withTimeout(TIMEOUT));
  }
}
