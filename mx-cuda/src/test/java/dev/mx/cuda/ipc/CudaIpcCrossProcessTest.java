package dev.mx.cuda.ipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.CudaTestSupport;
import dev.mx.cuda.DeviceAllocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * cuda-ipc between two processes: a child JVM publishes device memory, this one reads it. GPU only.
 */
class CudaIpcCrossProcessTest {
  private static final int BYTES = 8 * 1024 * 1024 + 3;

  @Test
  void aReceiverInAnotherProcessReadsDeviceMemoryByteExact() throws Exception {
    CudaTestSupport.assumeCuda();
    Process child = CudaIpcPublisherMain.start("trainer-0", BYTES, 99);
    try (Transport receiver =
            new CudaIpcTransportProvider().create(TransportConfig.of("engine-0"));
        DeviceAllocation dst = DeviceAllocation.allocate(0, BYTES + 16);
        Arena arena = Arena.ofConfined()) {
      Map<String, String> lines = CudaIpcPublisherMain.readHeader(child);
      receiver.connect("trainer-0", Base64.getDecoder().decode(lines.get("META")));
      receiver.register(dst.segment());
      long src = Long.parseLong(lines.get("DEVICE"));
      long d = dst.segment().address();
      // Three pieces at odd offsets, out of order.
      List<ReadDescriptor> batch = new ArrayList<>();
      batch.add(new ReadDescriptor("trainer-0", src + 1_000_001, d + 1, BYTES - 1_000_001));
      batch.add(new ReadDescriptor("trainer-0", src, d + 1 + BYTES - 1_000_001, 1_000_000));
      batch.add(new ReadDescriptor("trainer-0", src + 1_000_000, d, 1));
      receiver.read(batch);
      MemorySegment back = arena.allocate(BYTES);
      dst.copyTo(0, back);
      byte[] p = CudaIpcPublisherMain.pattern(BYTES, 99);
      byte[] expected = new byte[BYTES];
      expected[0] = p[1_000_000];
      System.arraycopy(p, 1_000_001, expected, 1, BYTES - 1_000_001);
      System.arraycopy(p, 0, expected, 1 + BYTES - 1_000_001, 1_000_000);
      assertArrayEquals(expected, back.toArray(ValueLayout.JAVA_BYTE));
      // Past the end of the published allocation: rejected before anything moves, naming the
      // descriptor.
      TransportException outside =
          assertThrows(
              TransportException.class,
              () ->
                  receiver.read(List.of(new ReadDescriptor("trainer-0", src + BYTES - 8, d, 16))));
      assertTrue(outside.getMessage().contains("#0"), outside.getMessage());
      // The publisher's host region is not exported across processes.
      long host = Long.parseLong(lines.get("HOST"));
      TransportException hostRead =
          assertThrows(
              TransportException.class,
              () -> receiver.read(List.of(new ReadDescriptor("trainer-0", host, d, 64))));
      assertEquals("trainer-0", hostRead.peer());
      assertTrue(hostRead.getMessage().contains("device memory only"), hostRead.getMessage());
    } finally {
      child.getOutputStream().close();
      if (!child.waitFor(30, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
    assertEquals(0, child.exitValue(), "publisher process exit status");
  }
}
