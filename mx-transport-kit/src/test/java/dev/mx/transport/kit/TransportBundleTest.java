package dev.mx.transport.kit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class TransportBundleTest {
  private final byte[] ucx = {1, 2, 3};
  private final byte[] shm = {4, 5, 6, 7};
  private final byte[] bundle =
      TransportBundle.encode(
          List.of(new TransportBundle.Entry("ucx", ucx), new TransportBundle.Entry("shm", shm)));

  @Test
  void roundTripKeepsOrderNamesAndBlobs() {
    List<TransportBundle.Entry> back = TransportBundle.decode(bundle);
    assertEquals(List.of("ucx", "shm"), TransportBundle.names(back));
    assertArrayEquals(ucx, back.get(0).metadata());
    assertArrayEquals(shm, back.get(1).metadata());
    assertTrue(TransportBundle.isBundle(bundle));
    assertFalse(TransportBundle.isBundle(ucx));
  }

  @Test
  void eachTransportGetsItsOwnBlobAndASingleBlobPassesThrough() {
    assertArrayEquals(shm, TransportBundle.forTransport("p", "shm", bundle));
    assertArrayEquals(ucx, TransportBundle.forTransport("p", "ucx", bundle));
    assertSame(ucx, TransportBundle.forTransport("p", "ucx", ucx));
    TransportException e =
        assertThrows(
            TransportException.class, () -> TransportBundle.forTransport("p", "nixl", bundle));
    assertEquals("p", e.peer());
    assertTrue(e.getMessage().contains("[ucx, shm]"), e.getMessage());
  }

  @Test
  void aTruncatedBundleIsRejected() {
    byte[] cut = Arrays.copyOf(bundle, bundle.length - 2);
    assertThrows(IllegalArgumentException.class, () -> TransportBundle.decode(cut));
    assertThrows(TransportException.class, () -> TransportBundle.forTransport("p", "shm", cut));
  }
}
