package dev.mx.transport.testsuite.tool;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.transport.kit.CallerDrivenProgress;
import dev.mx.transport.kit.RoutingTransport;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * A publisher process, the one every backend's cross-process tests and benches start: allocates
 * regions, fills them with a {@link Pattern}, registers them with an endpoint of {@code
 * --transport} ({@code ucx} by default; {@code auto} routes over every available one) and prints,
 * on stdout, one {@code region INDEX BASE LENGTH ORIGIN MEMORY} line per region, a {@code metadata
 * BASE64} line and {@code ready}, each prefixed with {@value #PREFIX}. It serves reads until its
 * stdin closes (so it never outlives the process that started it), then closes the endpoint and
 * exits 0. Regions of {@code --regions} are this process's memory of {@code --memory} ({@code host}
 * by default, or a device such as {@code cuda:0}, allocated and filled through that kind's {@link
 * MemoryOps}), registered ({@code registered}); regions of {@code --allocated} come from {@link
 * Transport#allocate} ({@code allocated}) and follow them in index order. An endpoint that moves
 * data only while driven ({@link CallerDrivenProgress}) is driven by a thread of its own meanwhile.
 *
 * <p>Usage: {@code PatternPublisher --session NAME --seed N --regions 96m,64m,... [--allocated
 * 64m,...] [--memory host|cuda:N] [--property KEY=VALUE]... [--transport NAME]}
 */
public final class PatternPublisher {
  /** Prefix of every line this process prints for its parent. */
  public static final String PREFIX = "mx-publisher: ";

  private PatternPublisher() {}

  public static void main(String[] args) throws Exception {
    String session = "publisher";
    long seed = 1;
    List<Long> sizes = new ArrayList<>();
    List<Long> allocated = new ArrayList<>();
    Map<String, String> properties = new LinkedHashMap<>();
    String transportName = "ucx";
    MemoryKind memory = MemoryKind.HOST;
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--session" -> session = require(args[i], value);
        case "--transport" -> transportName = require(args[i], value);
        case "--memory" -> memory = MemoryKind.parse(require(args[i], value));
        case "--seed" -> seed = Long.parseLong(require(args[i], value));
        case "--regions" -> {
          for (String s : require(args[i], value).split(",")) {
            sizes.add(parseSize(s));
          }
        }
        case "--allocated" -> {
          for (String s : require(args[i], value).split(",")) {
            allocated.add(parseSize(s));
          }
        }
        case "--property" -> {
          String kv = require(args[i], value);
          int eq = kv.indexOf('=');
          if (eq <= 0) {
            throw new IllegalArgumentException("--property wants KEY=VALUE, got '" + kv + "'");
          }
          properties.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        default -> throw new IllegalArgumentException("unknown argument '" + args[i] + "'");
      }
      i++;
    }
    if (sizes.isEmpty() && allocated.isEmpty()) {
      throw new IllegalArgumentException("--regions or --allocated is required");
    }
    PrintStream out = System.out;
    Pattern pattern = new Pattern(seed);
    MemoryOps ops =
        memory.isDevice() ? MemoryOpsProvider.forKind(memory, MemoryOpsProvider.registry()) : null;
    List<AutoCloseable> owned = new ArrayList<>();
    try (Arena arena = Arena.ofShared();
        Transport transport =
            open(
                transportName, new TransportConfig(session, Duration.ofSeconds(120), properties))) {
      int index = 0;
      for (long size : sizes) {
        MemorySegment region;
        if (ops == null) {
          region = arena.allocate(size, 4096);
          pattern.fill(region, index);
        } else {
          MemoryRegistration allocation = ops.allocate(size);
          owned.add(allocation);
          region = allocation.segment();
          fillThroughHost(pattern, index, ops, region, arena);
        }
        transport.register(region, memory);
        out.println(
            PREFIX
                + "region "
                + index++
                + " "
                + region.address()
                + " "
                + size
                + " registered "
                + memory);
      }
      for (long size : allocated) {
        MemorySegment region = transport.allocate(size).segment();
        pattern.fill(region, index);
        out.println(
            PREFIX + "region " + index++ + " " + region.address() + " " + size + " allocated host");
      }
      out.println(
          PREFIX + "metadata " + Base64.getEncoder().encodeToString(transport.localMetadata()));
      out.println(PREFIX + "ready");
      out.flush();
      Thread driver = transport instanceof CallerDrivenProgress d ? startDriver(d) : null;
      drain(System.in);
      if (driver != null) {
        driver.interrupt();
        driver.join();
      }
    } finally {
      for (AutoCloseable c : owned.reversed()) {
        c.close();
      }
    }
  }

  /** Device memory: the pattern goes through a host buffer in pieces of at most 16 MiB. */
  private static void fillThroughHost(
      Pattern pattern, int region, MemoryOps ops, MemorySegment device, Arena arena) {
    long piece = Math.min(device.byteSize(), 16L << 20);
    MemorySegment host = arena.allocate(piece, 4096);
    for (long at = 0; at < device.byteSize(); at += piece) {
      long n = Math.min(piece, device.byteSize() - at);
      pattern.write(host, 0, region, at, n);
      ops.copyFromHost(host, 0, device, at, n);
    }
  }

  /** Nothing else drives a caller-driven endpoint while this process only serves. */
  private static Thread startDriver(CallerDrivenProgress endpoint) {
    if (!endpoint.needsCallerProgress()) {
      return null;
    }
    return Thread.ofPlatform()
        .daemon()
        .name("publisher-progress")
        .start(
            () -> {
              while (!Thread.currentThread().isInterrupted()) {
                endpoint.progress();
                LockSupport.parkNanos(50_000);
              }
            });
  }

  /** {@code auto}: a routing endpoint over every available transport; otherwise the one named. */
  static Transport open(String name, TransportConfig config) {
    return name.equals("auto")
        ? RoutingTransport.open(config)
        : TransportProvider.registry().select(name).create(config);
  }

  private static void drain(InputStream in) throws IOException {
    byte[] buf = new byte[256];
    while (in.read(buf) >= 0) {
      // Serve until the parent closes our stdin (or dies).
    }
  }

  private static String require(String flag, String value) {
    if (value == null) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return value;
  }

  /** {@code 4096}, {@code 64k}, {@code 96m}, {@code 1g} (binary units). */
  static long parseSize(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    long unit =
        switch (t.isEmpty() ? ' ' : t.charAt(t.length() - 1)) {
          case 'k' -> 1L << 10;
          case 'm' -> 1L << 20;
          case 'g' -> 1L << 30;
          default -> 1;
        };
    return Long.parseLong(unit == 1 ? t : t.substring(0, t.length() - 1)) * unit;
  }
}
