package dev.mx.bench;

import dev.mx.digest.PlainInt32Sum;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The shard digest against its baseline, a plain int32 sum over the same off-heap buffer: time per
 * pass, so throughput is {@code mib / 1024 / score} GiB/s and the ratio is {@code int32Sum /
 * digest}. {@code threads = 0} means all cores. Target: ratio &ge; 1.0.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class DigestBenchmark {

  @Param({"1024"})
  public int mib;

  @Param({"1", "0"})
  public int threads;

  private Arena arena;
  private MemorySegment bytes;
  private ExecutorService pool;
  private int tasks;

  @Setup(Level.Trial)
  @SuppressWarnings("MustBeClosedChecker") // closed in the @TearDown method
  public void allocate() {
    tasks = threads == 0 ? Runtime.getRuntime().availableProcessors() : threads;
    arena = Arena.ofShared();
    bytes = arena.allocate((long) mib << 20, 4096);
    java.util.SplittableRandom random = new java.util.SplittableRandom(42);
    for (long at = 0; at < bytes.byteSize(); at += Long.BYTES) {
      bytes.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
    }
    pool = Executors.newFixedThreadPool(tasks);
  }

  @TearDown(Level.Trial)
  public void release() {
    pool.close();
    arena.close();
  }

  @Benchmark
  public String digest() {
    return tasks == 1 ? ShardDigest.digest(bytes) : ShardDigest.digest(bytes, pool, tasks);
  }

  @Benchmark
  public long int32Sum() {
    return tasks == 1 ? PlainInt32Sum.sum(bytes) : PlainInt32Sum.sum(bytes, pool, tasks);
  }
}
