package dev.mx.bench.suite;

import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.digest.FileDigest;
import dev.mx.digest.PlainInt32Sum;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The shard digest against a plain loop summing the same int32 words, over the same off-heap buffer
 * (1 GiB; {@code -Dmx.bench.digest.mib=N} to change), on one thread and on all threads. Target:
 * ratio &ge; 1.0, i.e. the digest costs no more than reading the memory once. A third pair repeats
 * both loops over 1 MiB that stays in cache, where memory does not hide what the loops themselves
 * cost.
 */
public final class DigestBench implements Benchmark {
  private static final long MIB = 1 << 20;

  /** Results land here so the JIT cannot drop a loop whose value nobody reads. */
  private static volatile Object sink;

  @Override
  public String name() {
    return "digest";
  }

  @Override
  public String description() {
    return "shard digest vs a plain int32 sum over the same 1 GiB off-heap, one thread and all threads";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    long size = Settings.system().integer("mx.bench.digest.mib", "MX_BENCH_DIGEST_MIB", 1024) * MIB;
    int threads = options.effectiveThreads();
    try (Arena arena = Arena.ofShared();
        ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      MemorySegment bytes = arena.allocate(size, 4096);
      fill(bytes);
      options
          .progress()
          .println(
              "digest bench: "
                  + size / MIB
                  + " MiB off-heap, kernel "
                  + ShardDigest.kernelName(size)
                  + ", 1 thread ...");
      double[] one =
          Measure.interleavedWallAndCpuMedians(
              2,
              options.repetitions(),
              () -> sink = ShardDigest.digest(bytes),
              () -> sink = PlainInt32Sum.sum(bytes));
      options.progress().println("digest bench: " + threads + " threads ...");
      double[] all =
          Measure.interleavedWallAndCpuMedians(
              2,
              options.repetitions(),
              () -> sink = ShardDigest.digest(bytes, pool, threads),
              () -> sink = PlainInt32Sum.sum(bytes, pool, threads));
      // The same two loops over 1 MiB that stays in cache: what each costs when memory is not the
      // limit.
      MemorySegment hot = bytes.asSlice(0, Math.min(size, MIB));
      int passes = 256;
      options
          .progress()
          .println(
              "digest bench: "
                  + hot.byteSize() / MIB
                  + " MiB in cache, kernel "
                  + ShardDigest.kernelName(hot.byteSize())
                  + ", 1 thread ...");
      double[] cached =
          Measure.interleavedWallAndCpuMedians(
              2,
              options.repetitions(),
              () -> {
                for (int p = 0; p < passes; p++) {
                  sink = ShardDigest.digest(hot);
                }
              },
              () -> {
                for (int p = 0; p < passes; p++) {
                  sink = PlainInt32Sum.sum(hot);
                }
              });
      List<BenchResult> results = new ArrayList<>();
      results.addAll(rates(size, "1_thread", one));
      results.addAll(rates(size, threads + (threads == 1 ? "_thread" : "_threads"), all));
      results.addAll(rates(hot.byteSize() * passes, "in_cache_1_thread", cached));
      results.add(
          fileRate(
              bytes.asSlice(
                  0,
                  Math.min(
                      size,
                      Settings.system()
                              .integer("mx.bench.digest.file.mib", "MX_BENCH_DIGEST_FILE_MIB", 256)
                          * MIB)),
              threads,
              pool,
              options));
      return results;
    }
  }

  /**
   * Wall-clock throughput (the figure of merit), then GB per CPU-second of the Java threads, which
   * leaves out time the OS gave to other processes and so moves less on a shared machine.
   */
  private static List<BenchResult> rates(long size, String threads, double[] t) {
    return List.of(
        new BenchResult(
            "digest_" + threads + "_GBps",
            size / t[0] / 1e9,
            "GB/s",
            "int32_sum_" + threads + "_GBps",
            size / t[1] / 1e9),
        new BenchResult(
            "digest_" + threads + "_GB_per_cpu_s",
            size / t[2] / 1e9,
            "GB/cpu-s",
            "int32_sum_" + threads + "_GB_per_cpu_s",
            size / t[3] / 1e9));
  }

  /**
   * {@code mx digest}'s path, {@link FileDigest#digest(Path, int)} (mapped under a read lease, so a
   * truncation waits instead of killing the JVM; read in chunks where no lease can be had), against
   * a plain int32 sum of a mapping of the same file, on all threads, from the page cache.
   */
  private static BenchResult fileRate(
      MemorySegment content, int threads, ExecutorService pool, BenchOptions options)
      throws Exception {
    Path file = Files.createTempFile("mx-bench-digest", ".bin");
    try {
      try (FileChannel out = FileChannel.open(file, StandardOpenOption.WRITE)) {
        out.write(content.asByteBuffer());
      }
      options
          .progress()
          .println(
              "digest bench: "
                  + content.byteSize() / MIB
                  + " MiB file, mx digest vs a plain sum of its mapping, "
                  + threads
                  + " threads ...");
      double[] t =
          Measure.interleavedWallAndCpuMedians(
              2,
              options.repetitions(),
              () -> sink = FileDigest.digest(file, threads),
              () -> {
                try (Arena arena = Arena.ofShared();
                    FileChannel ch = FileChannel.open(file)) {
                  sink =
                      PlainInt32Sum.sum(
                          ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena),
                          pool,
                          threads);
                }
              });
      return new BenchResult(
          "digest_file_GBps",
          content.byteSize() / t[0] / 1e9,
          "GB/s",
          "int32_sum_file_mapped_GBps",
          content.byteSize() / t[1] / 1e9);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** Pseudo-random words, so neither loop sees a pattern it could shortcut. */
  private static void fill(MemorySegment bytes) {
    SplittableRandom random = new SplittableRandom(42);
    for (long at = 0; at + Long.BYTES <= bytes.byteSize(); at += Long.BYTES) {
      bytes.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
    }
  }
}
