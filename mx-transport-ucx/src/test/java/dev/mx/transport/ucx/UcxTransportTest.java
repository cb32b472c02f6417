package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Behaviour specific to the ucx endpoint, in one JVM. */
class UcxTransportTest {

  @BeforeEach
  void ucxIsAvailable() {
    UcxTestSupport.requireUcx();
  }

  private static Transport open(String session, Map<String, String> properties) {
    return new UcxTransportProvider()
        .create(new TransportConfig(session, Duration.ofSeconds(30), properties));
  }

  private static MemorySegment filled(Arena arena, long size, int seed) {
    MemorySegment s = arena.allocate(size, 64);
    for (long i = 0; i < size; i++) {
      s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
    }
    return s;
  }

  private static void assertSame(MemorySegment expected, MemorySegment actual) {
    assertEquals(
        -1,
        MemorySegment.mismatch(expected, 0, expected.byteSize(), actual, 0, expected.byteSize()));
  }

  @Test
  void unusableMetadataAndTheOwnSessionAreRefusedNamingTheSession() {
    try (Transport t = open("t", Map.of());
        Transport other = open("other", Map.of())) {
      TransportException junk =
          assertThrows(TransportException.class, () -> t.connect("peer-x", new byte[] {1, 2, 3}));
      assertEquals("peer-x", junk.peer());
      assertTrue(junk.getMessage().contains("'peer-x'"), junk.getMessage());
      TransportException own =
          assertThrows(TransportException.class, () -> t.connect("t", other.localMetadata()));
      assertTrue(own.getMessage().contains("own session"), own.getMessage());
    }
  }

  @Test
  void regionsRegisteredAfterConnectBecomeReadableOnReconnect() {
    try (Arena arena = Arena.ofShared();
        Transport pub = open("pub", Map.of());
        Transport recv = open("recv", Map.of())) {
      MemorySegment a = filled(arena, 4096, 1);
      MemorySegment b = filled(arena, 4096, 2);
      MemorySegment dst = arena.allocate(4096, 64);
      pub.register(a);
      recv.register(dst);
      recv.connect("pub", pub.localMetadata());
      pub.register(b);
      ReadDescriptor fromB = new ReadDescriptor("pub", b.address(), dst.address(), 4096);
      TransportException unknown =
          assertThrows(TransportException.class, () -> recv.read(List.of(fromB)));
      assertTrue(unknown.getMessage().contains("outside every region"), unknown.getMessage());
      recv.connect("pub", pub.localMetadata()); // the publisher's fresh metadata lists b
      recv.read(List.of(fromB));
      assertSame(b, dst);
      recv.read(List.of(new ReadDescriptor("pub", a.address(), dst.address(), 4096)));
      assertSame(a, dst);
    }
  }

  @Test
  void overlappingRegistrationsAndAFullDirectoryAreRefused() {
    try (Arena arena = Arena.ofShared();
        Transport t = open("t", Map.of("ucx.maxRegions", "2"))) {
      MemorySegment s = arena.allocate(3 * 4096, 4096);
      t.register(s.asSlice(0, 4096));
      TransportException overlap =
          assertThrows(TransportException.class, () -> t.register(s.asSlice(2048, 4096)));
      assertTrue(overlap.getMessage().contains("overlaps"), overlap.getMessage());
      MemoryRegistration second = t.register(s.asSlice(4096, 4096));
      TransportException full =
          assertThrows(TransportException.class, () -> t.register(s.asSlice(8192, 4096)));
      assertTrue(full.getMessage().contains("ucx.maxRegions"), full.getMessage());
      second.close(); // frees its directory slot
      t.register(s.asSlice(8192, 4096));
    }
  }

  @Test
  void sharedMemoryTransportsWorkWhenChosen() {
    Map<String, String> sm = Map.of("ucx.tls", "sm,tcp");
    try (Arena arena = Arena.ofShared();
        Transport pub = open("pub", sm);
        Transport recv = open("recv", sm)) {
      assertEquals("sm,tcp", ((UcxTransport) recv).transports());
      MemorySegment src = filled(arena, 1 << 20, 3);
      MemorySegment dst = arena.allocate(1 << 20, 64);
      pub.register(src);
      recv.register(dst);
      recv.connect("pub", pub.localMetadata());
      recv.read(List.of(new ReadDescriptor("pub", src.address(), dst.address(), 1 << 20)));
      assertSame(src, dst);
    }
  }

  @Test
  void memoryUcxAllocatesIsReadableByPeersAndGoneAfterClose() {
    for (Map<String, String> props :
        List.of(Map.<String, String>of(), Map.of("ucx.tls", "sm,tcp"))) {
      try (Arena arena = Arena.ofShared();
          Transport pub = open("pub", props);
          Transport recv = open("recv", props)) {
        MemoryRegistration allocated = pub.allocate(1 << 20);
        MemorySegment src = allocated.segment();
        assertEquals(1 << 20, src.byteSize());
        MemorySegment expected = filled(arena, 1 << 20, 5);
        src.copyFrom(expected);
        MemorySegment dst = recv.allocate(1 << 20).segment(); // destinations may be allocated too
        recv.connect("pub", pub.localMetadata());
        ReadDescriptor all = new ReadDescriptor("pub", src.address(), dst.address(), 1 << 20);
        recv.read(List.of(all));
        assertSame(expected, dst);
        allocated.close();
        allocated.close();
        assertThrows(
            IllegalStateException.class,
            () -> src.get(ValueLayout.JAVA_BYTE, 0),
            "freed with its registration");
        TransportException gone =
            assertThrows(TransportException.class, () -> recv.read(List.of(all)));
        assertTrue(gone.getMessage().contains("deregistered"), gone.getMessage());
      }
    }
  }

  @Test
  void repeatedOpenReadCloseLeaksNoThreadsOrFileDescriptors() throws IOException {
    cycle(); // UCX opens a few process-wide descriptors on first use
    long fdsBefore = openFileDescriptors();
    for (int i = 0; i < 25; i++) {
      cycle();
    }
    long fdsAfter = openFileDescriptors();
    assertTrue(
        fdsAfter - fdsBefore <= 4,
        "file descriptors " + fdsBefore + " -> " + fdsAfter + " after 25 cycles");
    assertEquals(
        0,
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> t.getName().startsWith("mx-ucx-progress-") && t.isAlive())
            .count(),
        "progress threads left");
  }

  private static void cycle() {
    try (Arena arena = Arena.ofShared()) {
      Transport pub = open("pub", Map.of());
      Transport recv = open("recv", Map.of());
      MemorySegment src = filled(arena, 64 * 1024, 4);
      MemorySegment dst = arena.allocate(64 * 1024, 64);
      MemoryRegistration r = pub.register(src);
      recv.register(dst);
      recv.connect("pub", pub.localMetadata());
      recv.read(List.of(new ReadDescriptor("pub", src.address(), dst.address(), 64 * 1024)));
      assertSame(src, dst);
      // Close in an awkward order: the publisher (with a live registration) before the receiver.
      pub.close();
      r.close(); // after its endpoint: a no-op, not a crash
      recv.close();
      recv.close();
    }
  }

  private static long openFileDescriptors() throws IOException {
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      return fds.count();
    }
  }
}
