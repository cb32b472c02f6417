package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Device memory goes to NIXL as VRAM with its CUDA device ordinal, host memory as DRAM on device 0:
 * in {@code register_mem} and in both transfer lists of a read. Checked through the C test double,
 * which records the memory type and device id the binding passed (its memory is host memory
 * whatever the type says, so the bytes still move and are compared). A real NIXL needs a GPU and
 * CUDA-enabled UCX to check the same with real VRAM (see docs/performance/mx-cuda.md).
 */
class NixlVramRegistrationTest {
  private Arena arena;
  private NixlTransport publisher;
  private NixlTransport receiver;

  @BeforeEach
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterEach
  void open() {
    NixlDouble.reset();
    arena = Arena.ofShared();
    publisher = NixlDouble.transport("vram-publisher");
    receiver = NixlDouble.transport("vram-receiver");
  }

  @AfterEach
  void close() {
    receiver.close();
    publisher.close();
    arena.close();
    assertEquals(0, NixlDouble.live("registered"), "every registration released");
    NixlDouble.reset();
  }

  private MemorySegment filled(long n) {
    MemorySegment s = arena.allocate(n, 256);
    for (long i = 0; i < n; i++) {
      s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 1));
    }
    return s;
  }

  @Test
  void deviceRegistrationsAreVramWithTheOrdinalAndHostOnesDram() {
    assertTrue(publisher.supportsMemory(MemoryKind.device(3)));
    MemorySegment dev = filled(4096);
    MemoryRegistration r = publisher.register(dev, MemoryKind.device(3));
    assertEquals(MemoryKind.device(3), r.memoryKind());
    assertEquals(
        "type=1 dev=3 addr=0x" + Long.toHexString(dev.address()) + " len=4096",
        NixlDouble.lastRegistration());
    MemorySegment host = filled(512);
    MemoryRegistration h = publisher.register(host);
    assertEquals(MemoryKind.HOST, h.memoryKind());
    assertEquals(
        "type=0 dev=0 addr=0x" + Long.toHexString(host.address()) + " len=512",
        NixlDouble.lastRegistration());
    MemorySegment stated = filled(256);
    publisher.register(stated, MemoryKind.HOST);
    assertTrue(
        NixlDouble.lastRegistration().startsWith("type=0 dev=0 "), NixlDouble.lastRegistration());
  }

  @Test
  void aReadIntoDeviceMemoryUsesVramTransferListsOfThatDevice() {
    MemorySegment src = filled(8192);
    MemorySegment dst = arena.allocate(8192, 256);
    publisher.register(src, MemoryKind.device(1));
    receiver.register(dst, MemoryKind.device(1));
    receiver.connect("vram-publisher", publisher.localMetadata());
    receiver.read(
        List.of(new ReadDescriptor("vram-publisher", src.address() + 100, dst.address(), 4000)));
    assertEquals(-1, MemorySegment.mismatch(src, 100, 4100, dst, 0, 4000), "the bytes landed");
    assertEquals(
        "agent=(local) type=1 dev=1 count=1; agent=vram-publisher type=1 dev=1 count=1",
        NixlDouble.lastXfer());
  }

  @Test
  void aHostReadKeepsDramTransferLists() {
    MemorySegment src = filled(1024);
    MemorySegment dst = arena.allocate(1024, 64);
    publisher.register(src);
    receiver.register(dst);
    receiver.connect("vram-publisher", publisher.localMetadata());
    receiver.read(
        List.of(new ReadDescriptor("vram-publisher", src.address(), dst.address(), 1024)));
    assertEquals(-1, src.mismatch(dst));
    assertEquals(
        "agent=(local) type=0 dev=0 count=1; agent=vram-publisher type=0 dev=0 count=1",
        NixlDouble.lastXfer());
  }

  @Test
  void oneBatchFromOnePeerIntoHostAndDeviceMemoryFailsNamingBothKinds() {
    MemorySegment src = filled(2048);
    MemorySegment hostDst = arena.allocate(1024, 64);
    MemorySegment devDst = arena.allocate(1024, 256);
    publisher.register(src);
    receiver.register(hostDst);
    receiver.register(devDst, MemoryKind.device(0));
    receiver.connect("vram-publisher", publisher.localMetadata());
    TransportException e =
        assertThrows(
            TransportException.class,
            () ->
                receiver.read(
                    List.of(
                        new ReadDescriptor(
                            "vram-publisher", src.address(), hostDst.address(), 1024),
                        new ReadDescriptor(
                            "vram-publisher", src.address() + 1024, devDst.address(), 1024))));
    assertTrue(
        e.getMessage().contains("cuda:0") && e.getMessage().contains("host"), e.getMessage());
    assertTrue(e.getMessage().contains("descriptor #1"), e.getMessage());
  }
}
