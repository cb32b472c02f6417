package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.nixl.tool.NixlPublisher;
import dev.mx.transport.nixl.tool.NixlPublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A publisher JVM and this JVM reading from it through a real NIXL (skipped with the cause without
 * one).
 */
class NixlCrossProcessTest {
  private static final long MIB = 1 << 20;

  @BeforeAll
  static void realNixl() {
    NixlDouble.requireRealNixl();
  }

  @Test
  void readsFromAnotherProcessLandByteExactAndBadSourcesAreRejected() throws Exception {
    try (NixlPublisherProcess pub =
            NixlPublisherProcess.start(
                "xproc-publisher", List.of(16 * MIB, 4096L), Duration.ofSeconds(60));
        Arena arena = Arena.ofShared();
        Transport receiver =
            new NixlTransportProvider().create(TransportConfig.of("xproc-receiver"))) {
      MemorySegment dst = arena.allocate(16 * MIB + 4096, 4096);
      receiver.register(dst);
      receiver.connect("xproc-publisher", pub.metadata());
      long big = pub.regions().get(0).base();
      long small = pub.regions().get(1).base();
      List<ReadDescriptor> batch = new ArrayList<>();
      // 4 KiB descriptors reversed across the big region, then the whole small region.
      int n = (int) (16 * MIB / 4096);
      for (int i = 0; i < n; i++) {
        batch.add(
            new ReadDescriptor(
                "xproc-publisher", big + i * 4096L, dst.address() + (n - 1 - i) * 4096L, 4096));
      }
      batch.add(new ReadDescriptor("xproc-publisher", small, dst.address() + 16 * MIB, 4096));
      receiver.read(batch);
      receiver.read(batch); // again, through the cached request
      for (int i = 0; i < n; i += 61) {
        long at = (n - 1 - i) * 4096L;
        for (long k = 0; k < 512; k += 37) {
          assertEquals(
              NixlPublisher.word(0, i * 512L + k),
              dst.get(ValueLayout.JAVA_LONG_UNALIGNED, at + k * 8),
              "block " + i + " word " + k);
        }
      }
      assertEquals(
          NixlPublisher.word(1, 511), dst.get(ValueLayout.JAVA_LONG_UNALIGNED, 16 * MIB + 4088));
      TransportException e =
          assertThrows(
              TransportException.class,
              () ->
                  receiver.read(
                      List.of(
                          new ReadDescriptor(
                              "xproc-publisher", small + 4000, dst.address(), 200))));
      assertEquals("xproc-publisher", e.peer());
      assertTrue(e.getMessage().contains("#0"), e.getMessage());
    }
  }
}
