package dev.mx.transport.nixl.tool;

import dev.mx.api.annotation.Internal;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.nixl.NixlTransport;
import dev.mx.transport.nixl.NixlTransportProvider;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * {@code NixlPublisher SESSION SIZE...}: opens a nixl endpoint named SESSION, registers one region
 * per SIZE (bytes) filled with {@link #word the pattern}, prints {@code region INDEX BASE LENGTH}
 * per region, then {@code metadata BASE64} (NIXL's blob) and {@code ready}, and serves reads until
 * its standard input closes.
 */
@Internal
public final class NixlPublisher {
  /** Every line this process prints for its launcher starts with this. */
  static final String PREFIX = "nixl-publisher ";

  private NixlPublisher() {}

  /** The pattern's 8-byte word {@code k} of region {@code region} (splitmix64 of both). */
  public static long word(int region, long k) {
    long x = region * 0x9E3779B97F4A7C15L + k + 0x9E3779B97F4A7C15L;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  /** Fills {@code s} with region {@code region}'s pattern (a trailing partial word is zero). */
  public static void fill(MemorySegment s, int region) {
    for (long k = 0, n = s.byteSize() / 8; k < n; k++) {
      s.set(ValueLayout.JAVA_LONG_UNALIGNED, k * 8, word(region, k));
    }
  }

  public static void main(String[] args) throws IOException, InterruptedException {
    if (args.length < 2) {
      System.err.println("usage: NixlPublisher SESSION SIZE...");
      System.exit(2);
    }
    PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    List<MemoryRegistration> regs = new ArrayList<>();
    try (Arena arena = Arena.ofShared();
        Transport t = new NixlTransportProvider().create(TransportConfig.of(args[0]))) {
      for (int i = 1; i < args.length; i++) {
        MemorySegment s = arena.allocate(Long.parseLong(args[i]), 4096);
        fill(s, i - 1);
        regs.add(t.register(s));
        out.println(PREFIX + "region " + (i - 1) + " " + s.address() + " " + s.byteSize());
      }
      out.println(PREFIX + "metadata " + Base64.getEncoder().encodeToString(t.localMetadata()));
      out.println(PREFIX + "ready");
      // Without NIXL's progress thread nobody would drive this agent while receivers read from it.
      Thread driver = null;
      if (t instanceof NixlTransport n && !n.usesProgressThread()) {
        driver =
            Thread.ofPlatform()
                .daemon()
                .name("nixl-publisher-progress")
                .start(
                    () -> {
                      while (!Thread.currentThread().isInterrupted()) {
                        n.progress();
                        LockSupport.parkNanos(50_000);
                      }
                    });
      }
      while (System.in.read() >= 0) {
        // serve until the launcher closes our stdin
      }
      if (driver != null) {
        driver.interrupt();
        driver.join();
      }
      for (int i = regs.size() - 1; i >= 0; i--) {
        regs.get(i).close();
      }
    }
  }
}
