package dev.mx.transport.nixl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.transport.testsuite.AbstractCrossProcessTest;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The cross-process suite with both processes over the NIXL test double (which reaches the other
 * process with process_vm_readv): the path {@code mx bench nixl} and the real-NIXL test take, run
 * on every machine. Plus what only a double can show cheaply: a publisher's death is a transport
 * error naming it.
 */
class NixlDoubleCrossProcessTest extends AbstractCrossProcessTest {

  @Override
  protected String publisherTransport() {
    return "nixl";
  }

  @Override
  protected List<String> publisherJvmArguments() {
    return List.of("-D" + Nixl.LIBRARY_PROPERTY + "=" + NixlDouble.LIBRARY.origin());
  }

  @Override
  protected boolean isAvailable() {
    return true; // Maven compiles the double before the tests
  }

  @Override
  protected void assumeAvailable() {}

  @Override
  protected Transport newReceiver(String session, Duration timeout) {
    NixlDouble.reset(); // no fault another test class injected into this JVM's double
    return NixlDouble.transport(session);
  }

  @Test
  void aPublishersDeathIsATransportErrorNamingIt() throws Exception {
    try (PublisherProcess pub =
            PublisherProcess.launch("nixl", "child")
                .seed(5)
                .regions(List.of(1L << 20))
                .jvmArguments(publisherJvmArguments())
                .start(Duration.ofSeconds(60));
        Arena arena = Arena.ofShared();
        Transport reader = NixlDouble.transport("parent")) {
      MemorySegment dst = arena.allocate(1 << 20, 4096);
      reader.register(dst);
      reader.connect("child", pub.metadata());
      long base = pub.regions().getFirst().base();
      List<ReadDescriptor> batch = new ArrayList<>();
      for (int i = 0; i < 256; i++) {
        batch.add(
            new ReadDescriptor("child", base + i * 4096L, dst.address() + (255 - i) * 4096L, 4096));
      }
      reader.read(batch);
      for (int i = 0; i < 256; i++) {
        assertEquals(-1, pub.pattern().mismatch(dst, (255 - i) * 4096L, 0, i * 4096L, 4096));
      }
      pub.kill();
      TransportException dead = assertThrows(TransportException.class, () -> reader.read(batch));
      assertEquals("child", dead.peer());
      assertTrue(dead.getMessage().contains("ERROR_BACKEND"), dead.getMessage());
    }
  }
}
