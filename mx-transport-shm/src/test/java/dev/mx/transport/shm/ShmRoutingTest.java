package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.kit.RoutingTransport;
import dev.mx.transport.kit.TransportBundle;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import dev.mx.transport.ucx.UcxTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Per-peer routing with real processes: a publisher serving shm and ucx at once is read over shm by
 * a routing receiver and over ucx by a receiver forced to ucx, in the same step; a ucx-only
 * publisher is read over ucx by a receiver that also has shm.
 */
class ShmRoutingTest {
  private static final long MIB = 1 << 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  @BeforeEach
  void bothTransportsAreAvailable() {
    ShmUcxEndpoints.assumeShmAndUcx();
  }

  private static Transport routing(String session) {
    return ShmUcxEndpoints.routing(session);
  }

  /**
   * Reads every region of {@code pub} into {@code dst} in 1 MiB descriptors and checks every byte.
   */
  private static void readAllExact(Transport receiver, PublisherProcess pub, MemorySegment dst) {
    List<ReadDescriptor> all = new ArrayList<>();
    long at = 0;
    for (PublisherProcess.Region r : pub.regions()) {
      for (long off = 0; off < r.length(); off += MIB) {
        all.add(
            new ReadDescriptor(
                pub.session(),
                r.base() + off,
                dst.address() + at + off,
                Math.min(MIB, r.length() - off)));
      }
      at += r.length();
    }
    dst.fill((byte) 0x5a);
    receiver.read(all);
    at = 0;
    for (PublisherProcess.Region r : pub.regions()) {
      assertEquals(
          -1, pub.pattern().mismatch(dst, at, r.index(), 0, r.length()), "region " + r.index());
      at += r.length();
    }
  }

  @Test
  void onePublisherTwoReceiversOneOverShmOneForcedToUcxBothExact() throws Exception {
    try (PublisherProcess pub =
            PublisherProcess.launch("auto", "trainer-0")
                .seed(3)
                .regions(List.of(8 * MIB))
                .allocated(List.of(8 * MIB))
                .start(TIMEOUT);
        Arena arena = Arena.ofShared();
        Transport viaShm = routing("inference-0");
        Transport viaUcx =
            new UcxTransportProvider()
                .create(TransportConfig.of("inference-1").withTimeout(TIMEOUT))) {
      List<TransportBundle.Entry> offered = TransportBundle.decode(pub.metadata());
      assertEquals(
          List.of("ucx", "shm"),
          TransportBundle.names(offered),
          "ucx is primary: agent_meta_b64 stays ucx's");
      MemorySegment a = arena.allocate(16 * MIB, 4096);
      MemorySegment b = arena.allocate(16 * MIB, 4096);
      viaShm.register(a);
      viaUcx.register(b);
      viaShm.connect("trainer-0", pub.metadata());
      viaUcx.connect("trainer-0", pub.metadata());
      assertEquals("shm", ((RoutingTransport) viaShm).routeOf("trainer-0").name());
      CompletableFuture<Void> one = CompletableFuture.runAsync(() -> readAllExact(viaShm, pub, a));
      CompletableFuture<Void> two = CompletableFuture.runAsync(() -> readAllExact(viaUcx, pub, b));
      one.get();
      two.get();
      assertTrue(
          ((RoutingTransport) viaShm).transports().get(0).stats().bytesMoved() >= 16 * MIB,
          "shm moved it");
      assertEquals(
          0,
          ((RoutingTransport) viaShm).transports().get(1).stats().bytesMoved(),
          "ucx moved nothing");
    }
  }

  @Test
  void aUcxOnlyPublisherIsReadOverUcxByAReceiverThatAlsoHasShm() throws Exception {
    try (PublisherProcess pub =
            PublisherProcess.launch("ucx", "trainer-1")
                .seed(4)
                .regions(List.of(8 * MIB))
                .start(TIMEOUT);
        Arena arena = Arena.ofShared();
        Transport receiver = routing("inference-0")) {
      MemorySegment dst = arena.allocate(8 * MIB, 4096);
      receiver.register(dst);
      receiver.connect("trainer-1", pub.metadata());
      assertEquals("ucx", ((RoutingTransport) receiver).routeOf("trainer-1").name());
      readAllExact(receiver, pub, dst);
    }
  }

  @Test
  void aPeerNoTransportReachesIsRefusedNamingItAndEveryReason() {
    try (Transport receiver = routing("inference-0")) {
      TransportException e =
          assertThrows(
              TransportException.class,
              () -> receiver.connect("ghost", new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9}));
      assertEquals("ghost", e.peer());
      assertTrue(
          e.getMessage().contains("'ghost'") && e.getMessage().contains("shm+ucx"), e.getMessage());
      assertInstanceOf(TransportException.class, e.getCause());
    }
  }
}
