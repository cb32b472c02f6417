package dev.mx.transport.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Behaviour specific to the shm backend. */
class ShmTransportTest {

  @BeforeEach
  void shmIsAvailable() {
    ShmTestSupport.assumeShm();
  }

  @Test
  void isFoundThroughServiceLoaderAboveUcxAndReachesOnlyThisHost() {
    TransportProvider p = TransportProvider.registry().select("shm");
    assertTrue(p.isAvailable());
    assertEquals(9, p.priority());
    assertTrue(p.hostLocal());
  }

  @Test
  void allocatedMemoryIsReadFromItsSharedFileAndGoneOnceDeregistered() throws Exception {
    try (Arena arena = Arena.ofConfined();
        ShmTransport pub =
            (ShmTransport) new ShmTransportProvider().create(TransportConfig.of("pub"));
        Transport rec = new ShmTransportProvider().create(TransportConfig.of("rec"))) {
      MemoryRegistration shared = pub.allocate(1 << 20);
      for (long i = 0; i < (1 << 20); i += 8) {
        shared.segment().set(ValueLayout.JAVA_LONG, i, i ^ 0x5555);
      }
      MemorySegment dst = arena.allocate(1 << 20, 4096);
      rec.register(dst);
      rec.connect("pub", pub.localMetadata());
      rec.read(List.of(new ReadDescriptor("pub", shared.address(), dst.address(), 1 << 20)));
      assertEquals(-1, MemorySegment.mismatch(shared.segment(), 0, 1 << 20, dst, 0, 1 << 20));
      assertEquals(2, ShmPeerFaultTest.filesStartingWith(pub.filePrefix()).size());
      long address = shared.address();
      shared.close();
      assertEquals(
          1,
          ShmPeerFaultTest.filesStartingWith(pub.filePrefix()).size(),
          "the region's file is deleted");
      TransportException e =
          assertThrows(
              TransportException.class,
              () -> rec.read(List.of(new ReadDescriptor("pub", address, dst.address(), 64))));
      assertTrue(e.getMessage().contains("deregistered"), e.getMessage());
      pub.close();
      assertEquals(
          List.of(),
          ShmPeerFaultTest.filesStartingWith(pub.filePrefix()),
          "a clean close leaves nothing");
    }
  }

  @Test
  void aPeerOnAnotherHostIsRefusedSoARouterFallsThrough() {
    try (ShmTransport pub =
            (ShmTransport) new ShmTransportProvider().create(TransportConfig.of("pub"));
        Transport rec = new ShmTransportProvider().create(TransportConfig.of("rec"))) {
      ShmPeerMetadata m = ShmPeerMetadata.decode(pub.localMetadata());
      ShmHost h = m.host();
      ShmHost elsewhere =
          new ShmHost(
              "00000000-0000-0000-0000-000000000000",
              h.hostname(),
              h.pidNamespace(),
              h.pid(),
              h.startTime(),
              h.uid());
      byte[] foreign =
          new ShmPeerMetadata(
                  elsewhere,
                  m.nonce(),
                  m.directoryPath(),
                  m.directoryCapacity(),
                  m.crossMemoryAttach(),
                  m.regions())
              .encode();
      TransportException e =
          assertThrows(TransportException.class, () -> rec.connect("pub", foreign));
      assertEquals("pub", e.peer());
      assertTrue(e.getMessage().contains("not on this host"), e.getMessage());
      // A forged nonce (another /dev/shm under the same name) is refused too.
      byte[] forged =
          new ShmPeerMetadata(
                  h,
                  m.nonce() + 2,
                  m.directoryPath(),
                  m.directoryCapacity(),
                  m.crossMemoryAttach(),
                  m.regions())
              .encode();
      TransportException f =
          assertThrows(TransportException.class, () -> rec.connect("pub", forged));
      assertTrue(f.getMessage().contains("not the one its metadata describes"), f.getMessage());
    }
  }

  @Test
  void countsBytesReadFromMappingsApartFromBytesReadByCrossMemoryAttach() {
    try (Arena arena = Arena.ofShared();
        ShmTransport pub =
            (ShmTransport) new ShmTransportProvider().create(TransportConfig.of("pub"));
        ShmTransport rec =
            (ShmTransport) new ShmTransportProvider().create(TransportConfig.of("rec"))) {
      MemoryRegistration shared = pub.allocate(8192);
      MemorySegment own = arena.allocate(4096, 4096);
      shared.segment().fill((byte) 1);
      own.fill((byte) 2);
      pub.register(own);
      MemorySegment dst = arena.allocate(8192 + 4096, 4096);
      rec.register(dst);
      rec.connect("pub", pub.localMetadata());
      assertEquals(0, rec.mappedBytesRead());
      assertEquals(0, rec.attachedBytesRead());
      rec.read(
          List.of(
              new ReadDescriptor("pub", shared.address(), dst.address(), 8192),
              new ReadDescriptor("pub", own.address(), dst.address() + 8192, 4096)));
      assertEquals(8192, rec.mappedBytesRead(), "allocated memory is copied from its mapping");
      assertEquals(
          4096, rec.attachedBytesRead(), "registered memory is read with process_vm_readv");
      assertEquals(2, dst.get(ValueLayout.JAVA_BYTE, 8192 + 4095));
      assertEquals(1, dst.get(ValueLayout.JAVA_BYTE, 8191));
      assertEquals(
          0, pub.mappedBytesRead() + pub.attachedBytesRead(), "the publisher read nothing");
    }
  }
}
