package dev.mx.cuda.ipc;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cuda.CudaMemory;
import dev.mx.cuda.DeviceAllocation;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A publisher process for cuda-ipc tests and {@code mx bench cuda}: {@code CudaIpcPublisherMain
 * SESSION BYTES SEED} allocates {@code BYTES} of device memory on cuda:0 filled from {@code SEED}
 * ({@link #pattern}; a negative seed fills 0x5A, for benchmarks), plus a 4 KiB host region,
 * registers both with a cuda-ipc endpoint, prints {@code META <base64 metadata>}, {@code DEVICE
 * <address>} and {@code HOST <address>} on stdout, and serves until its stdin closes.
 */
@Internal
public final class CudaIpcPublisherMain {
  private CudaIpcPublisherMain() {}

  /** The bytes a publisher with {@code seed} serves. */
  public static byte[] pattern(int bytes, long seed) {
    byte[] b = new byte[bytes];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  /**
   * Starts a publisher process with this JVM's runtime and class path; read its lines with {@link
   * #readHeader}, and close its stdin to end it.
   */
  public static Process start(String session, long bytes, long seed) throws IOException {
    String java = ProcessHandle.current().info().command().orElse("java");
    return new ProcessBuilder(
            java,
            "--enable-native-access=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path"),
            CudaIpcPublisherMain.class.getName(),
            session,
            Long.toString(bytes),
            Long.toString(seed))
        .redirectError(ProcessBuilder.Redirect.INHERIT)
        .start();
  }

  /**
   * The {@code META}, {@code DEVICE} and {@code HOST} lines a publisher process printed, waiting up
   * to 60 s.
   */
  public static Map<String, String> readHeader(Process child) throws Exception {
    BufferedReader r =
        new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
    CompletableFuture<Map<String, String>> lines =
        CompletableFuture.supplyAsync(
            () -> {
              Map<String, String> out = new HashMap<>();
              try {
                while (out.size() < 3) {
                  String line = r.readLine();
                  if (line == null) {
                    throw new IllegalStateException(
                        "the cuda-ipc publisher process exited before printing its metadata");
                  }
                  int space = line.indexOf(' ');
                  if (space > 0) {
                    out.put(line.substring(0, space), line.substring(space + 1));
                  }
                }
              } catch (IOException e) {
                throw new UncheckedIOException(e);
              }
              return out;
            });
    return lines.get(60, TimeUnit.SECONDS);
  }

  public static void main(String[] args) throws Exception {
    String session = args[0];
    long bytes = Long.parseLong(args[1]);
    long seed = Long.parseLong(args[2]);
    try (Arena arena = Arena.ofShared();
        DeviceAllocation weights = DeviceAllocation.allocate(0, bytes);
        Transport t =
            new CudaIpcTransportProvider()
                .create(new TransportConfig(session, Duration.ofSeconds(60), Map.of()))) {
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
      System.in.transferTo(OutputStream.nullOutputStream()); // serve until the parent closes stdin
    }
  }
}
