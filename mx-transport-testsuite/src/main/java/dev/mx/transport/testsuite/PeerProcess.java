package dev.mx.transport.testsuite;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Base64;

/**
 * A publisher endpoint in its own JVM, for {@link TransportBehavior#SUPPORTS_PEERS_IN_OTHER_PROCESSES}:
 * {@code PeerProcess TRANSPORT SESSION BYTES SEED} registers {@code BYTES} of the suite's pattern, prints
 * {@code READY <base64 metadata> <address>} and serves reads until its standard input closes.
 */
public final class PeerProcess {
  private PeerProcess() {}

  public static void main(String[] args) throws Exception {
    String transport = args[0];
    long bytes = Long.parseLong(args[2]);
    long seed = Long.parseLong(args[3]);
    TransportProvider provider = TransportProvider.registry().select(transport);
    try (Arena arena = Arena.ofShared(); Transport t = provider.create(TransportConfig.of(args[1]))) {
      MemorySegment source = arena.allocate(bytes, 64);
      AbstractTransportConformanceTest.fill(source, seed);
      try (var registration = t.register(source)) {
        System.out.println("READY " + Base64.getEncoder().encodeToString(t.localMetadata()) + " " + source.address());
        System.out.flush();
        while (System.in.read() >= 0) {
          // Serve until the test closes our stdin.
        }
      }
    }
  }
}
