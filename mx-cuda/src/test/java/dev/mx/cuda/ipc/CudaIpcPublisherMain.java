package dev.mx.cuda.ipc;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.DeviceAllocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Base64;
import java.util.SplittableRandom;

/**
 * The publisher process of {@link CudaIpcCrossProcessTest}: allocates {@code bytes} of device memory filled
 * from seed {@code seed}, plus a small host region, registers both with a cuda-ipc endpoint, prints
 * {@code META <base64>}, {@code DEVICE <address>} and {@code HOST <address>}, and serves until stdin closes.
 */
public final class CudaIpcPublisherMain {
  private CudaIpcPublisherMain() {}

  static byte[] pattern(int bytes, long seed) {
    byte[] b = new byte[bytes];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  public static void main(String[] args) throws Exception {
    String session = args[0];
    int bytes = Integer.parseInt(args[1]);
    long seed = Long.parseLong(args[2]);
    try (Arena arena = Arena.ofShared();
        DeviceAllocation weights = DeviceAllocation.allocate(0, bytes);
        Transport t = new CudaIpcTransportProvider().create(
            new TransportConfig(session, Duration.ofSeconds(60), java.util.Map.of()))) {
      MemorySegment host = arena.allocate(bytes);
      MemorySegment.copy(pattern(bytes, seed), 0, host, ValueLayout.JAVA_BYTE, 0, bytes);
      weights.copyFrom(host, 0);
      MemorySegment hostRegion = arena.allocate(4096);
      t.register(weights.segment());
      t.register(hostRegion);
      System.out.println("META " + Base64.getEncoder().encodeToString(t.localMetadata()));
      System.out.println("DEVICE " + weights.segment().address());
      System.out.println("HOST " + hostRegion.address());
      System.out.flush();
      System.in.transferTo(java.io.OutputStream.nullOutputStream()); // serve until the parent closes stdin
    }
  }
}
