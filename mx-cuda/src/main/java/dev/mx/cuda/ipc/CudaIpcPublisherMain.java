package dev.mx.cuda.ipc;

import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.CudaMemory;
import dev.mx.cuda.DeviceAllocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Base64;
import java.util.SplittableRandom;

/**
 * A publisher process for cuda-ipc tests and {@code mx bench cuda}:
 * {@code CudaIpcPublisherMain SESSION BYTES SEED} allocates {@code BYTES} of device memory on cuda:0 filled
 * from {@code SEED} ({@link #pattern}; a negative seed fills 0x5A, for benchmarks), plus a 4 KiB host region,
 * registers both with a cuda-ipc endpoint, prints {@code META <base64 metadata>}, {@code DEVICE <address>}
 * and {@code HOST <address>} on stdout, and serves until its stdin closes.
 */
public final class CudaIpcPublisherMain {
  private CudaIpcPublisherMain() {}

  /** The bytes a publisher with {@code seed} serves. */
  public static byte[] pattern(int bytes, long seed) {
    byte[] b = new byte[bytes];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  public static void main(String[] args) throws Exception {
    String session = args[0];
    long bytes = Long.parseLong(args[1]);
    long seed = Long.parseLong(args[2]);
    try (Arena arena = Arena.ofShared();
        DeviceAllocation weights = DeviceAllocation.allocate(0, bytes);
        Transport t = new CudaIpcTransportProvider().create(
            new TransportConfig(session, Duration.ofSeconds(60), java.util.Map.of()))) {
      if (seed < 0) {
        CudaMemory.fill(weights.device(), weights.segment().address(), bytes, (byte) 0x5A);
      } else {
        int n = Math.toIntExact(bytes);
        MemorySegment host = arena.allocate(n);
        MemorySegment.copy(pattern(n, seed), 0, host, ValueLayout.JAVA_BYTE, 0, n);
        weights.copyFrom(host, 0);
      }
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
