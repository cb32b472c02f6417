package dev.mx.transport.cudaipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The cuda-ipc metadata codec (no GPU needed): round trip, and bad input named after the peer. */
class CudaIpcMetadataTest {

  private static CudaIpcMetadata sample() {
    byte[] handle = new byte[64];
    for (int i = 0; i < handle.length; i++) {
      handle[i] = (byte) (i * 7 + 1);
    }
    return new CudaIpcMetadata(
        4242,
        UUID.fromString("12345678-9abc-def0-1234-56789abcdef0"),
        1,
        List.of(
            new CudaIpcMetadata.Region(0x7f00_0000_1000L, 1 << 20, 1, 256, handle),
            new CudaIpcMetadata.Region(0x5555_0000L, 4096, -1, 0, new byte[64])));
  }

  @Test
  void roundTripsEveryField() {
    CudaIpcMetadata m = sample();
    CudaIpcMetadata back = CudaIpcMetadata.decode("trainer-0", m.encode());
    assertEquals(m, back);
    assertEquals(4242, back.pid());
    assertEquals(1, back.device());
    assertTrue(back.regions().get(0).isDevice());
    assertEquals(256, back.regions().get(0).offsetInAllocation());
    assertFalse(back.regions().get(1).isDevice());
    assertEquals(-1, back.regions().get(1).deviceOrdinal());
    assertEquals(8 + 16 + 16 + 2 * (32 + 64), m.encode().length);
  }

  @Test
  void foreignBytesAreRejectedNamingThePeer() {
    TransportException e =
        assertThrows(
            TransportException.class,
            () -> CudaIpcMetadata.decode("trainer-3", new byte[] {1, 2, 3}));
    assertEquals("trainer-3", e.peer());
    assertTrue(e.getMessage().contains("not cuda-ipc metadata"), e.getMessage());
    byte[] mem =
        ByteBuffer.allocate(40)
            .order(ByteOrder.LITTLE_ENDIAN)
            .putInt(0x4d584d45)
            .array(); // mem's magic
    assertThrows(TransportException.class, () -> CudaIpcMetadata.decode("trainer-3", mem));
  }

  @Test
  void anotherVersionIsRejectedSayingSo() {
    byte[] bytes = sample().encode();
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(4, 9);
    TransportException e =
        assertThrows(TransportException.class, () -> CudaIpcMetadata.decode("p", bytes));
    assertTrue(e.getMessage().contains("version 9"), e.getMessage());
  }

  @Test
  void truncatedOrInconsistentRegionListsAreRejected() {
    byte[] bytes = sample().encode();
    TransportException cut =
        assertThrows(
            TransportException.class,
            () -> CudaIpcMetadata.decode("p", Arrays.copyOf(bytes, bytes.length - 10)));
    assertTrue(cut.getMessage().contains("announces 2 regions"), cut.getMessage());
    ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(36, -1);
    assertThrows(TransportException.class, () -> CudaIpcMetadata.decode("p", bytes));
  }

  @Test
  void handlesHaveSixtyFourBytes() {
    assertEquals(dev.mx.cuda.CudaIpc.HANDLE_BYTES, CudaIpcMetadata.HANDLE_BYTES);
    assertThrows(
        IllegalArgumentException.class, () -> new CudaIpcMetadata.Region(0, 1, 0, 0, new byte[63]));
  }
}
