package dev.mx.transport.cudaipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.Cuda;
import dev.mx.cuda.CudaTestSupport;
import dev.mx.transport.testsuite.AbstractCrossProcessTest;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The cross-process suite over cuda-ipc: a child JVM publishes 256 MiB of device memory on cuda:0
 * and this one reads it into device memory, byte-exact; plus the refusal of a host region, which
 * cuda-ipc does not export across processes. GPU only: skips with the cause elsewhere.
 */
class CudaIpcCrossProcessTest extends AbstractCrossProcessTest {

  @Override
  protected String publisherTransport() {
    return "cuda-ipc";
  }

  @Override
  protected MemoryKind memoryKind() {
    return MemoryKind.device(0);
  }

  @Override
  protected boolean isAvailable() {
    return Cuda.isAvailable() && Cuda.deviceCount() > 0;
  }

  @Override
  protected void assumeAvailable() {
    CudaTestSupport.assumeCuda();
  }

  @Override
  protected Transport newReceiver(String session, Duration timeout) {
    return new CudaIpcTransportProvider().create(TransportConfig.of(session).withTimeout(timeout));
  }

  @Test
  void aHostRegionOfAnotherProcessIsRefusedNamingThePeer() throws Exception {
    try (PublisherProcess host =
            PublisherProcess.launch("cuda-ipc", "host-publisher")
                .regions(List.of(4096L))
                .start(Duration.ofSeconds(60));
        Transport reader = newReceiver("host-reader", Duration.ofSeconds(60))) {
      reader.register(dst, memoryKind());
      reader.connect("host-publisher", host.metadata());
      long base = host.regions().getFirst().base();
      TransportException e =
          assertThrows(
              TransportException.class,
              () ->
                  reader.read(
                      List.of(new ReadDescriptor("host-publisher", base, dst.address(), 64))));
      assertEquals("host-publisher", e.peer());
      assertTrue(e.getMessage().contains("device memory only"), e.getMessage());
    }
  }
}
