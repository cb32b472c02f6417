package dev.mx.api.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The default {@link Transport#allocate}: registered arena memory, deregistered and freed on close.
 */
class ArenaAllocationTest {

  /** Test double: records registrations and deregistrations; everything else is unsupported. */
  private static final class RecordingTransport implements Transport {
    final List<MemorySegment> registered = new ArrayList<>();
    int deregistered;

    @Override
    public MemoryRegistration register(MemorySegment region) {
      registered.add(region);
      return new MemoryRegistration() {
        @Override
        public MemorySegment segment() {
          return region;
        }

        @Override
        public void close() {
          deregistered++;
        }
      };
    }

    @Override
    public String name() {
      return "recording";
    }

    @Override
    public String localSession() {
      return "s";
    }

    @Override
    public byte[] localMetadata() {
      throw new UnsupportedOperationException();
    }

    @Override
    public void connect(String session, byte[] peerMetadata) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean isConnected(String session) {
      return false;
    }

    @Override
    public void read(List<ReadDescriptor> batch, Duration timeout) {
      throw new UnsupportedOperationException();
    }

    @Override
    public PendingRead post(String session, List<ReadDescriptor> group) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void awaitAll(List<PendingRead> posted, Duration timeout) {
      throw new UnsupportedOperationException();
    }

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
  void allocatesRegistersAndFreesOnClose() {
    RecordingTransport t = new RecordingTransport();
    MemoryRegistration r = t.allocate(10_000);
    assertEquals(10_000, r.length());
    assertEquals(List.of(r.segment()), t.registered);
    assertEquals(0, r.address() % 4096, "page aligned");
    r.segment().set(ValueLayout.JAVA_LONG, 0, 42L); // usable
    r.close();
    r.close();
    assertEquals(1, t.deregistered, "deregistered once");
    assertThrows(
        IllegalStateException.class, () -> r.segment().get(ValueLayout.JAVA_LONG, 0), "freed");
  }

  @Test
  void refusesNonPositiveSizes() {
    TransportException e =
        assertThrows(TransportException.class, () -> new RecordingTransport().allocate(0));
    assertTrue(e.getMessage().contains("0 bytes"), e.getMessage());
  }
}
