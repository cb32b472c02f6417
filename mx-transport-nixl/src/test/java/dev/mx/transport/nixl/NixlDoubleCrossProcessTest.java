package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.transport.nixl.tool.NixlPublisher;
import dev.mx.transport.nixl.tool.NixlPublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The publisher tool in a child JVM and this JVM reading from it, both over the test double (which
 * reaches the other process with process_vm_readv): the same path {@code mx bench nixl} and the
 * real two-process test take.
 */
class NixlDoubleCrossProcessTest {

  @BeforeEach
  void reset() {
    NixlDouble.reset();
  }

  @Test
  void readsFromAPublisherProcessAndItsDeathIsATransportErrorNamingIt() throws Exception {
    Map<String, String> useDouble = Map.of(Nixl.LIBRARY_PROPERTY, NixlDouble.LIBRARY.origin());
    try (NixlPublisherProcess pub =
            NixlPublisherProcess.start(
                "child", List.of(1L << 20), Duration.ofSeconds(60), useDouble);
        Arena arena = Arena.ofShared();
        NixlTransport receiver = NixlDouble.transport("parent")) {
      MemorySegment dst = arena.allocate(1 << 20, 4096);
      receiver.register(dst);
      receiver.connect("child", pub.metadata());
      long base = pub.regions().getFirst().base();
      List<ReadDescriptor> batch = new ArrayList<>();
      for (int i = 0; i < 256; i++) {
        batch.add(
            new ReadDescriptor("child", base + i * 4096L, dst.address() + (255 - i) * 4096L, 4096));
      }
      receiver.read(batch);
      for (int i = 0; i < 256; i += 17) {
        assertEquals(
            NixlPublisher.word(0, i * 512L + 3),
            dst.get(ValueLayout.JAVA_LONG_UNALIGNED, (255 - i) * 4096L + 24),
            "block " + i);
      }
      TransportException outside =
          assertThrows(
              TransportException.class,
              () ->
                  receiver.read(
                      List.of(
                          new ReadDescriptor("child", base + (1 << 20) - 8, dst.address(), 16))));
      assertTrue(outside.getMessage().contains("#0"), outside.getMessage());
      pub.kill();
      TransportException dead = assertThrows(TransportException.class, () -> receiver.read(batch));
      assertEquals("child", dead.peer());
      assertTrue(dead.getMessage().contains("ERROR_BACKEND"), dead.getMessage());
    }
  }
}
