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
import dev.mx.transport.shm.Shm;
import dev.mx.transport.shm.ShmTransportProvider;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The shm transport across processes against {@link MemorySegment#copy} of the same sizes in this
 * process, both measured in this run, interleaved: a child JVM publishes two 64 MiB regions, one
 * from {@code Transport.allocate} (a shared file this JVM maps: plain copies) and one of its own
 * memory (registered, as a trainer's weights are: read with cross-memory attach); this JVM reads
 * each in batches of 64 KiB, 1 MiB and 64 MiB descriptors (bandwidth) and of 4 KiB descriptors
 * (descriptors per second). As the baseline does, every descriptor of a run reads the same source
 * bytes into the same destination.
 */
public final class ShmBench implements Benchmark {
  /** Bytes one run moves. */
  private static final long RUN_BYTES = 256 * MIB;

  private static final String SESSION = "bench-publisher";

  @Override
  public String name() {
    return "shm";
  }

  @Override
  public String description() {
    return "shm transport across processes: read bandwidth (64 KiB, 1 MiB, 64 MiB) and 4 KiB descriptors/s vs MemorySegment.copy";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    if (!Shm.isAvailable()) {
      throw new TransportException(
          null, "shm bench: the shm transport is unavailable: " + Shm.unavailabilityCause());
    }
    if (!Shm.crossMemoryAttach()) {
      options
          .progress()
          .println(
              "shm bench: cross-memory attach is unavailable ("
                  + Shm.crossMemoryAttachCause()
                  + "): measuring shared (allocated) memory only");
    }
    try (Arena arena = Arena.ofShared();
        Transport receiver =
            new ShmTransportProvider()
                .create(TransportConfig.of("bench-receiver").withTimeout(Duration.ofMinutes(5)))) {
      MemorySegment dst = arena.allocate(64 * MIB, 4096);
      MemorySegment localSrc = arena.allocate(64 * MIB, 4096);
      localSrc.fill((byte) 7);
      receiver.register(dst);
      List<Long> own = Shm.crossMemoryAttach() ? List.of(64 * MIB) : List.of();
      try (PublisherProcess publisher =
          PublisherProcess.launch("shm", SESSION)
              .seed(1)
              .regions(own)
              .allocated(List.of(64 * MIB))
              .start(Duration.ofSeconds(120))) {
        receiver.connect(SESSION, publisher.metadata());
        PublisherProcess.Region shared = publisher.regions().getLast();
        PublisherProcess.Region registered = own.isEmpty() ? null : publisher.regions().getFirst();
        List<BenchResult> results = new ArrayList<>();
        for (long size : new long[] {64 * KIB, MIB, 64 * MIB, 4 * KIB}) {
          int count = (int) (RUN_BYTES / size);
          boolean rate = size == 4 * KIB;
          options
              .progress()
              .println("shm bench: " + label(size) + " descriptors, " + count + " per run ...");
          Measure.Action baseline =
              () -> {
                for (int i = 0; i < count; i++) {
                  MemorySegment.copy(localSrc, 0, dst, 0, size);
                }
              };
          double unit = rate ? count : RUN_BYTES / 1e9;
          String u = rate ? "desc/s" : "GB/s";
          String base = "memory_copy_" + label(size) + (rate ? "_copies_per_s" : "_GBps");
          String metric = "shm_read_" + label(size) + (rate ? "_descriptors_per_s" : "_GBps");
          List<ReadDescriptor> fromShared =
              Collections.nCopies(
                  count, new ReadDescriptor(SESSION, shared.base(), dst.address(), size));
          double[] m =
              Measure.interleavedMedians(
                  3, options.repetitions(), () -> receiver.read(fromShared), baseline);
          results.add(new BenchResult(metric, unit / m[0], u, base, unit / m[1]));
          if (registered != null) {
            List<ReadDescriptor> fromOwn =
                Collections.nCopies(
                    count, new ReadDescriptor(SESSION, registered.base(), dst.address(), size));
            double[] r =
                Measure.interleavedMedians(
                    3, options.repetitions(), () -> receiver.read(fromOwn), baseline);
            results.add(
                new BenchResult(
                    metric.replace("shm_read_", "shm_read_registered_"),
                    unit / r[0],
                    u,
                    base,
                    unit / r[1]));
          }
        }
        return results;
      }
    }
  }
}
