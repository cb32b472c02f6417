package dev.mx.bench.suite;

import static dev.mx.bench.suite.ByteSizes.KIB;
import static dev.mx.bench.suite.ByteSizes.MIB;
import static dev.mx.bench.suite.ByteSizes.label;

import dev.mx.api.error.TransportException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.transport.nixl.Nixl;
import dev.mx.transport.nixl.NixlTransportProvider;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The nixl transport across processes against {@link MemorySegment#copy} in this process: a child
 * JVM publishes a 64 MiB region through NIXL and this JVM reads it in batches of 64 KiB, 1 MiB and
 * 64 MiB descriptors (bandwidth) and of 4 KiB descriptors (descriptors per second, also once with
 * the request cache off, to show what re-preparing every batch costs). The baseline copies the same
 * descriptors between two local segments. Without a real NIXL it fails saying so, with the cause.
 */
public final class NixlBench implements Benchmark {
  private static final long REGION = 64 * MIB;

  /** Bytes one run moves. */
  private static final long RUN_BYTES = 256 * MIB;

  private static final int WARMUPS = 2;
  private static final String SESSION = "bench-nixl-publisher";

  @Override
  public String name() {
    return "nixl";
  }

  @Override
  public String description() {
    return "nixl transport across processes: READ bandwidth (64 KiB, 1 MiB, 64 MiB) and 4 KiB descriptors/s vs MemorySegment.copy";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    if (!Nixl.isAvailable()) {
      throw new TransportException(
          null,
          "nixl bench: NIXL IS ABSENT, nothing was measured (set MX_NIXL_LIBRARY to a"
              + " real libnixl_capi.so): "
              + Nixl.unavailabilityCause());
    }
    options
        .progress()
        .println("nixl bench: " + Nixl.libraryOrigin() + ", plugins " + Nixl.plugins());
    NixlTransportProvider provider = new NixlTransportProvider();
    try (Arena arena = Arena.ofShared();
        Transport receiver =
            provider.create(
                TransportConfig.of("bench-nixl-receiver").withTimeout(Duration.ofMinutes(5)));
        Transport uncached =
            provider.create(
                new TransportConfig(
                    "bench-nixl-uncached",
                    Duration.ofMinutes(5),
                    Map.of("nixl.cachedRequests", "0")));
        PublisherProcess publisher =
            PublisherProcess.launch("nixl", SESSION)
                .regions(List.of(REGION))
                .start(Duration.ofMinutes(2))) {
      MemorySegment dst = arena.allocate(REGION, 4096);
      MemorySegment localSrc = arena.allocate(REGION, 4096);
      receiver.register(dst);
      uncached.register(dst);
      receiver.connect(SESSION, publisher.metadata());
      uncached.connect(SESSION, publisher.metadata());
      long base = publisher.regions().getFirst().base();
      List<BenchResult> results = new ArrayList<>();
      for (long size : new long[] {64 * KIB, MIB, 64 * MIB, 4 * KIB}) {
        int count = (int) (RUN_BYTES / size);
        boolean rate = size == 4 * KIB;
        List<ReadDescriptor> batch = new ArrayList<>(count);
        long[] offsets = new long[count];
        for (int i = 0; i < count; i++) {
          // Walk the region so every read is a distinct source and destination, like a refit plan.
          offsets[i] = (i * size) % REGION;
          batch.add(
              new ReadDescriptor(SESSION, base + offsets[i], dst.address() + offsets[i], size));
        }
        options
            .progress()
            .println("nixl bench: " + label(size) + " reads, " + count + " per run ...");
        double unit = rate ? count : RUN_BYTES / 1e9;
        double[] m =
            Measure.interleavedMedians(
                WARMUPS,
                options.repetitions(),
                () -> receiver.read(batch),
                () -> {
                  for (long off : offsets) {
                    MemorySegment.copy(localSrc, off, dst, off, size);
                  }
                });
        String metric = "nixl_read_" + label(size) + (rate ? "_descriptors_per_s" : "_GBps");
        String baseline = "memory_copy_" + label(size) + (rate ? "_copies_per_s" : "_GBps");
        String u = rate ? "desc/s" : "GB/s";
        results.add(new BenchResult(metric, unit / m[0], u, baseline, unit / m[1]));
        if (rate) {
          double[] un =
              Measure.interleavedMedians(
                  1, options.repetitions(), () -> uncached.read(batch), () -> receiver.read(batch));
          results.add(
              new BenchResult(
                  "nixl_read_4KiB_uncached_descriptors_per_s",
                  unit / un[0],
                  u,
                  "nixl_read_4KiB_cached_descriptors_per_s",
                  unit / un[1]));
        }
      }
      return results;
    }
  }
}
