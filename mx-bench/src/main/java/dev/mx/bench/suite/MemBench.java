package dev.mx.bench.suite;

import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code mem} transport against {@link MemorySegment#copy} of the same bytes: 64 MiB
 * descriptors (bandwidth) and 4 KiB descriptors (descriptor rate).
 */
public final class MemBench implements Benchmark {
  private static final long MIB = 1 << 20;

  @Override
  public String name() {
    return "mem";
  }

  @Override
  public String description() {
    return "mem transport: 64 MiB descriptors vs MemorySegment.copy, and 4 KiB descriptors per second";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    long size = 256 * MIB;
    int big = (int) (size / (64 * MIB));
    int small = (int) (size / 4096);
    try (Arena arena = Arena.ofShared();
        Transport pub = new MemTransportProvider().create(TransportConfig.of("bench-publisher"));
        Transport recv = new MemTransportProvider().create(TransportConfig.of("bench-receiver"))) {
      MemorySegment src = arena.allocate(size, 4096);
      MemorySegment dst = arena.allocate(size, 4096);
      src.fill((byte) 1);
      dst.fill((byte) 0);
      pub.register(src);
      recv.register(dst);
      recv.connect("bench-publisher", pub.localMetadata());

      List<ReadDescriptor> bigBatch = descriptors(src, dst, 64 * MIB, big);
      List<ReadDescriptor> smallBatch = descriptors(src, dst, 4096, small);
      options.progress().println("mem bench: 64 MiB descriptors over " + size / MIB + " MiB ...");
      double[] bigT =
          Measure.interleavedMedians(
              2,
              options.repetitions(),
              () -> recv.read(bigBatch),
              () -> {
                for (int i = 0; i < big; i++) {
                  MemorySegment.copy(src, i * 64 * MIB, dst, i * 64 * MIB, 64 * MIB);
                }
              });
      options.progress().println("mem bench: 4 KiB descriptors (" + small + " per batch) ...");
      double[] smallT =
          Measure.interleavedMedians(
              2,
              options.repetitions(),
              () -> recv.read(smallBatch),
              () -> {
                for (int i = 0; i < small; i++) {
                  MemorySegment.copy(src, i * 4096L, dst, i * 4096L, 4096);
                }
              });
      // The same descriptor rate with a cache-resident working set (4 MiB), which exposes the
      // transport's own per-descriptor cost instead of DRAM bandwidth.
      int hot = 1024;
      List<ReadDescriptor> hotBatch = descriptors(src, dst, 4096, hot);
      options
          .progress()
          .println("mem bench: 4 KiB descriptors, cache-resident (" + hot + " per batch) ...");
      double[] hotT =
          Measure.interleavedMedians(
              200,
              options.repetitions() * 200,
              () -> recv.read(hotBatch),
              () -> {
                for (int i = 0; i < hot; i++) {
                  MemorySegment.copy(src, i * 4096L, dst, i * 4096L, 4096);
                }
              });
      return List.of(
          new BenchResult(
              "mem_read_64MiB_GBps",
              size / bigT[0] / 1e9,
              "GB/s",
              "memorysegment_copy_64MiB_GBps",
              size / bigT[1] / 1e9),
          new BenchResult(
              "mem_read_4KiB_descriptors_per_s",
              small / smallT[0],
              "desc/s",
              "memorysegment_copy_4KiB_per_s",
              small / smallT[1]),
          new BenchResult(
              "mem_read_4KiB_cached_descriptors_per_s",
              hot / hotT[0],
              "desc/s",
              "memorysegment_copy_4KiB_cached_per_s",
              hot / hotT[1]));
    }
  }

  private static List<ReadDescriptor> descriptors(
      MemorySegment src, MemorySegment dst, long each, int count) {
    List<ReadDescriptor> batch = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      batch.add(
          new ReadDescriptor(
              "bench-publisher", src.address() + i * each, dst.address() + i * each, each));
    }
    return batch;
  }
}
