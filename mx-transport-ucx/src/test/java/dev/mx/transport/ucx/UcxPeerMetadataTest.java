package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The metadata blob: what goes in comes out, and anything else is refused with a reason. */
class UcxPeerMetadataTest {
  private static final UcxPeerMetadata SAMPLE =
      new UcxPeerMetadata(
          new byte[] {1, 2, 3, 4, 5},
          0x7f00_0000_1000L,
          64,
          new byte[] {9, 9},
          List.of(
              new UcxPeerMetadata.Region(
                  0x7f00_0010_0000L, 4096, 0, 0x1234_5678_9abc_def1L, new byte[] {7, 7, 7}),
              new UcxPeerMetadata.Region(0x7f00_0020_0000L, 1L << 33, 63, -3L, new byte[0])));

  @Test
  void roundTripsEveryField() {
    UcxPeerMetadata back = UcxPeerMetadata.decode(SAMPLE.encode());
    assertArrayEquals(SAMPLE.workerAddress(), back.workerAddress());
    assertEquals(SAMPLE.directoryBase(), back.directoryBase());
    assertEquals(SAMPLE.directorySlots(), back.directorySlots());
    assertArrayEquals(SAMPLE.directoryRkey(), back.directoryRkey());
    assertEquals(2, back.regions().size());
    for (int i = 0; i < 2; i++) {
      UcxPeerMetadata.Region a = SAMPLE.regions().get(i);
      UcxPeerMetadata.Region b = back.regions().get(i);
      assertEquals(a.base(), b.base());
      assertEquals(a.length(), b.length());
      assertEquals(a.slot(), b.slot());
      assertEquals(a.cookie(), b.cookie());
      assertArrayEquals(a.rkey(), b.rkey());
    }
  }

  @Test
  void refusesWhatIsNotUcxMetadata() {
    assertRefused(new byte[] {1, 2, 3}, "not ucx transport metadata");
    assertRefused(new byte[] {'M', 'X', 'M', 'E', 0, 0, 0, 0}, "bad magic");
    byte[] blob = SAMPLE.encode();
    blob[4] = 9; // version
    assertRefused(blob, "version 9");
  }

  @Test
  void refusesCorruptBlobs() {
    byte[] blob = SAMPLE.encode();
    assertRefused(Arrays.copyOf(blob, blob.length - 1), "truncated");
    assertRefused(Arrays.copyOf(blob, blob.length + 3), "3 trailing bytes");
    byte[] hugeAddress = blob.clone();
    hugeAddress[6] = (byte) 0xff; // worker address length: 255 bytes more than the blob holds
    assertRefused(hugeAddress, "worker address claims");
    UcxPeerMetadata badSlot =
        new UcxPeerMetadata(
            new byte[1],
            0,
            4,
            new byte[1],
            List.of(new UcxPeerMetadata.Region(4096, 8, 4, 1, new byte[1])));
    assertRefused(badSlot.encode(), "slot 4");
  }

  private static void assertRefused(byte[] blob, String why) {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> UcxPeerMetadata.decode(blob));
    assertTrue(e.getMessage().contains(why), "expected '" + why + "' in: " + e.getMessage());
  }
}
