package dev.mx.transport.mem;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** Behaviour specific to the in-process backend. */
class MemTransportTest {

  @Test
  void isFoundThroughServiceLoaderAsAvailableWithLowestPriority() {
    TransportProvider p = TransportProvider.registry().select("mem");
    assertTrue(p.isAvailable());
    assertEquals(0, p.priority());
  }

  @Test
  void peerMetadataOfAClosedEndpointIsRejected() {
    Transport a = new MemTransportProvider().create(TransportConfig.of("a"));
    Transport b = new MemTransportProvider().create(TransportConfig.of("b"));
    byte[] meta = a.localMetadata();
    a.close();
    TransportException e = assertThrows(TransportException.class, () -> b.connect("a", meta));
    assertTrue(e.getMessage().contains("own process"), e.getMessage());
    assertThrows(TransportException.class, () -> b.connect("junk", new byte[] {1, 2, 3}));
    b.close();
  }

  @Test
  void overlappingRegistrationIsRejected() {
    try (Arena arena = Arena.ofConfined();
        Transport t = new MemTransportProvider().create(TransportConfig.of("t"))) {
      MemorySegment s = arena.allocate(1024);
      t.register(s);
      assertThrows(TransportException.class, () -> t.register(s.asSlice(512, 64)));
    }
  }
}
