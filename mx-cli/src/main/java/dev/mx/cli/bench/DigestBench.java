package dev.mx.cli.bench;

import dev.mx.api.util.Settings;
import dev.mx.digest.PlainInt32Sum;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The shard digest against a plain loop summing the same int32 words, over the same off-heap buffer
 * (1 GiB; {@code -Dmx.bench.digest.mib=N} to change), on one thread and on all threads. Target: ratio
 * &ge; 1.0, i.e. the digest costs no more than reading the memory once.
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
    try (Arena arena = Arena.ofShared(); ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      MemorySegment bytes = arena.allocate(size, 4096);
      fill(bytes);
      options.progress().println("digest bench: " + size / MIB + " MiB off-heap, kernel "
          + ShardDigest.kernelName() + ", 1 thread ...");
      double[] one = Measure.interleavedMedians(2, options.repetitions(),
          () -> sink = ShardDigest.digest(bytes),
          () -> sink = PlainInt32Sum.sum(bytes));
      options.progress().println("digest bench: " + threads + " threads ...");
      double[] all = Measure.interleavedMedians(2, options.repetitions(),
          () -> sink = ShardDigest.digest(bytes, pool, threads),
          () -> sink = PlainInt32Sum.sum(bytes, pool, threads));
      String t = threads + (threads == 1 ? "_thread" : "_threads");
      return List.of(
          new BenchResult("digest_1_thread_GBps", size / one[0] / 1e9, "GB/s",
              "int32_sum_1_thread_GBps", size / one[1] / 1e9),
          new BenchResult("digest_" + t + "_GBps", size / all[0] / 1e9, "GB/s",
              "int32_sum_" + t + "_GBps", size / all[1] / 1e9));
    }
  }

  /** Pseudo-random words (splitmix64), so neither loop sees a pattern it could shortcut. */
  private static void fill(MemorySegment bytes) {
    long x = 0x9E3779B97F4A7C15L;
    for (long at = 0; at + Long.BYTES <= bytes.byteSize(); at += Long.BYTES) {
      x += 0x9E3779B97F4A7C15L;
      long z = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      bytes.set(ValueLayout.JAVA_LONG_UNALIGNED, at, z ^ (z >>> 31));
    }
  }
}
