package dev.mx.transport.cudaipc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.CudaTestSupport;
import dev.mx.cuda.DeviceAllocation;
import dev.mx.transport.testsuite.AbstractTransportConformanceTest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite over {@code cuda-ipc} (endpoints of one process: host memory through the
 * driver's unified addressing), plus device-to-device reads. GPU only; skips with the cause
 * elsewhere.
 */
class CudaIpcTransportConformanceTest extends AbstractTransportConformanceTest {

  @Override
  protected Transport newTransport(String session) {
    CudaTestSupport.assumeCuda();
    return new CudaIpcTransportProvider().create(TransportConfig.of(session));
  }

  @Test
  void deviceToDeviceReadsLandByteExact() {
    int n = 3 * 1024 * 1024 + 5;
    byte[] pattern = new byte[n];
    new SplittableRandom(3).nextBytes(pattern);
    try (DeviceAllocation src = DeviceAllocation.allocate(0, n);
        DeviceAllocation dst = DeviceAllocation.allocate(0, n);
        Arena a = Arena.ofConfined()) {
      MemorySegment host = a.allocate(n);
      MemorySegment.copy(pattern, 0, host, ValueLayout.JAVA_BYTE, 0, n);
      src.copyFrom(host, 0);
      MemoryRegistration published = publisher.register(src.segment());
      assertEquals(MemoryKind.device(0), published.memoryKind());
      receiver.connect(PEER, publisher.localMetadata());
      receiver.register(dst.segment());
      long s = src.segment().address();
      long d = dst.segment().address();
      // Halves swapped, the odd byte last.
      receiver.read(
          List.of(
              new ReadDescriptor(PEER, s, d + n / 2, n / 2),
              new ReadDescriptor(PEER, s + n / 2, d, n - n / 2)));
      MemorySegment back = a.allocate(n);
      dst.copyTo(0, back);
      byte[] expected = new byte[n];
      System.arraycopy(pattern, 0, expected, n / 2, n / 2);
      System.arraycopy(pattern, n / 2, expected, 0, n - n / 2);
      assertArrayEquals(expected, back.toArray(ValueLayout.JAVA_BYTE));
    }
  }
}
