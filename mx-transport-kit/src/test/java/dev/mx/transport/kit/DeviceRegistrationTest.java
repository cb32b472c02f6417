package dev.mx.transport.kit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.PendingRead;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportStats;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Registering memory of a kind: the interface default refuses device memory naming the transport
 * and the kind, a routing transport registers device memory only with the transports that read it
 * (and refuses when none does, rolling back on a failure), and {@link RegionBook} keeps a backend's
 * registrations consistent. Also whether a routing transport revokes deregistered memory.
 */
class DeviceRegistrationTest {
  private static final MemoryKind CUDA0 = MemoryKind.device(0);

  /**
   * Test double: a transport that only records (de)registrations, reading device memory when told
   * to.
   */
  private static final class KindRecordingTransport implements Transport {
    final String name;
    final boolean readsDevice;
    final List<MemoryKind> registered = new ArrayList<>();
    int open;
    boolean failDevice;
    boolean revokes = true;

    KindRecordingTransport(String name, boolean readsDevice) {
      this.name = name;
      this.readsDevice = readsDevice;
    }

    private MemoryRegistration record(MemorySegment region, MemoryKind kind) {
      registered.add(kind);
      open++;
      return MemoryRegistration.ofKind(
          new MemoryRegistration() {
            @Override
            public MemorySegment segment() {
              return region;
            }

            @Override
            public void close() {
              open--;
            }
          },
          kind);
    }

    @Override
    public MemoryRegistration register(MemorySegment region) {
      return record(region, MemoryKind.HOST);
    }

    @Override
    public boolean supportsMemory(MemoryKind kind) {
      return readsDevice || !kind.isDevice();
    }

    @Override
    public MemoryRegistration register(MemorySegment region, MemoryKind kind) {
      if (!supportsMemory(kind)) {
        return Transport.super.register(region, kind);
      }
      if (failDevice && kind.isDevice()) {
        throw new TransportException(null, name + ": injected registration failure (test double)");
      }
      return record(region, kind);
    }

    @Override
    public boolean revokesDeregisteredMemory() {
      return revokes;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String localSession() {
      return "s";
    }

    @Override
    public byte[] localMetadata() {
      return new byte[0];
    }

    @Override
    public void connect(String session, byte[] peerMetadata) {}

    @Override
    public boolean isConnected(String session) {
      return false;
    }

    @Override
    public void read(List<ReadDescriptor> batch, Duration timeout) {}

    @Override
    public PendingRead post(String session, List<ReadDescriptor> group) {
      return null;
    }

    @Override
    public void awaitAll(List<PendingRead> posted, Duration timeout) {}

    @Override
    public Duration defaultTimeout() {
      return Duration.ofSeconds(1);
    }

    @Override
    public TransportStats stats() {
      return new TransportStats(0, 0, 0);
    }

    @Override
    public boolean isHealthy() {
      return true;
    }

    @Override
    public void close() {}
  }

  @Test
  void theDefaultRefusesDeviceMemoryNamingTransportAndKind() {
    KindRecordingTransport host = new KindRecordingTransport("hostonly", false);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment s = a.allocate(128);
      TransportException e =
          assertThrows(TransportException.class, () -> host.register(s, MemoryKind.device(4)));
      assertTrue(
          e.getMessage()
              .startsWith(
                  "hostonly transport cannot register cuda:4 memory (region 0x"
                      + Long.toHexString(s.address())
                      + "+128): it reads host memory only"),
          e.getMessage());
      assertEquals(List.of(), host.registered, "nothing registered");
      assertEquals(MemoryKind.HOST, host.register(s, MemoryKind.HOST).memoryKind());
    }
  }

  @Test
  void routingRegistersDeviceMemoryWithTheTransportsThatReadIt() {
    KindRecordingTransport shm = new KindRecordingTransport("shm", false);
    KindRecordingTransport ipc = new KindRecordingTransport("cuda-ipc", true);
    RoutingTransport routing = new RoutingTransport(TransportConfig.of("s"), List.of(shm, ipc), 0);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment s = a.allocate(256);
      assertTrue(routing.supportsMemory(CUDA0));
      MemoryRegistration r = routing.register(s, CUDA0);
      assertEquals(List.of(), shm.registered, "shm cannot read device memory");
      assertEquals(List.of(CUDA0), ipc.registered);
      assertSame(s, r.segment());
      r.close();
      assertEquals(0, ipc.open, "closing the routed registration deregisters it");
      routing.register(s, MemoryKind.HOST).close();
      assertEquals(List.of(MemoryKind.HOST), shm.registered, "host memory goes to every transport");
    } finally {
      routing.close();
    }
  }

  @Test
  void routingRevokesDeregisteredMemoryOnlyWhenEveryRoutedTransportDoes() {
    KindRecordingTransport shm = new KindRecordingTransport("shm", false);
    KindRecordingTransport nixl = new KindRecordingTransport("nixl", true);
    assertTrue(shm.revokesDeregisteredMemory(), "the interface default: revokes");
    RoutingTransport revoking =
        new RoutingTransport(TransportConfig.of("s"), List.of(shm, nixl), 0);
    assertTrue(revoking.revokesDeregisteredMemory());
    nixl.revokes = false;
    assertFalse(
        revoking.revokesDeregisteredMemory(), "a peer may be routed to the one that cannot");
    revoking.close();
  }

  @Test
  void routingWithoutADeviceReaderRefusesNamingEveryTransportAndRollsBackAFailure() {
    KindRecordingTransport shm = new KindRecordingTransport("shm", false);
    KindRecordingTransport ucx = new KindRecordingTransport("ucx", false);
    RoutingTransport hostOnly = new RoutingTransport(TransportConfig.of("s"), List.of(shm, ucx), 1);
    KindRecordingTransport first = new KindRecordingTransport("cuda-ipc", true);
    KindRecordingTransport second = new KindRecordingTransport("nixl", true);
    second.failDevice = true;
    RoutingTransport failing =
        new RoutingTransport(TransportConfig.of("s"), List.of(first, second), 0);
    try (Arena a = Arena.ofConfined()) {
      MemorySegment s = a.allocate(64);
      assertTrue(!hostOnly.supportsMemory(CUDA0));
      TransportException e =
          assertThrows(TransportException.class, () -> hostOnly.register(s, CUDA0));
      assertTrue(
          e.getMessage().startsWith("shm+ucx transport cannot register cuda:0 memory"),
          e.getMessage());
      TransportException f =
          assertThrows(TransportException.class, () -> failing.register(s, CUDA0));
      assertTrue(f.getMessage().contains("injected registration failure"), f.getMessage());
      assertEquals(0, first.open, "the registration that succeeded was rolled back");
    } finally {
      hostOnly.close();
      failing.close();
    }
  }

  /** Test double: a registration of a {@link RegionBook}. */
  private record Entry(int id, MemorySegment segment) implements MemoryRegistration {
    @Override
    public void close() {}
  }

  @Test
  void aRegionBookRefusesOverlapsAndKeepsSnapshotsStable() {
    RegionBook<Entry> book = new RegionBook<>("book-test");
    try (Arena a = Arena.ofConfined()) {
      MemorySegment x = a.allocate(1024);
      MemorySegment y = a.allocate(512);
      Entry ex = book.add(x, id -> new Entry(id, x));
      Entry ey = book.add(y, id -> new Entry(id, y));
      assertEquals(2, book.table().size());
      TransportException e =
          assertThrows(
              TransportException.class,
              () -> book.add(x.asSlice(100, 10), id -> new Entry(id, x.asSlice(100, 10))));
      assertTrue(
          e.getMessage()
              .startsWith(
                  "book-test transport: region 0x"
                      + Long.toHexString(x.address() + 100)
                      + "+10 overlaps a region already registered"),
          e.getMessage());
      assertEquals(List.of(ex, ey), book.all(), "the refused region was not added");
      RegionBook.Snapshot<Entry> before = book.snapshot();
      book.remove(ex.id());
      assertEquals(-1, book.table().find(x.address(), 8), "removed from the live table");
      int id = before.table().find(x.address() + 8, 8);
      assertSame(ex, before.get(id), "an older snapshot still resolves what it validated");
      assertSame(ey, book.snapshot().get(book.table().find(y.address(), 512)));
      book.clear();
      assertEquals(0, book.table().size());
    }
  }
}
