package dev.mx.bench;

import dev.mx.api.DType;
import dev.mx.refit.cast.Casts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
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
 * The receiver's casts and their baselines, time per pass on a 64 MiB source: {@code cast} converts
 * {@code pair} ("from>to"); {@code copyDst} and {@code copyTraffic} copy the cast's destination
 * bytes and (source + destination) / 2 bytes, the copy with the same memory traffic. Ratio =
 * baseline time / cast time. The single-JVM sweep with interleaved baselines is {@code ./mx bench
 * kernels} (KernelBench).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class CastBenchmark {
  private static final long SIZE = 64L << 20;

  @Param({
    "bf16>f32",
    "f32>bf16",
    "f16>f32",
    "f32>f16",
    "f32>f8_e4m3fn",
    "f8_e4m3fn>bf16",
    "bf16>f8_e4m3fn"
  })
  public String pair;

  private Arena arena;
  private MemorySegment src;
  private MemorySegment dst;
  private MemorySegment copyFrom;
  private MemorySegment copyTo;
  private DType from;
  private DType to;
  private long elements;

  @Setup(Level.Trial)
  @SuppressWarnings("MustBeClosedChecker") // closed in the @TearDown method
  public void allocate() {
    String[] p = pair.split(">");
    from = DType.parse(p[0]);
    to = DType.parse(p[1]);
    elements = SIZE / from.elementSize();
    arena = Arena.ofShared();
    src = arena.allocate(2 * SIZE, 4096);
    dst = arena.allocate(4 * SIZE, 4096);
    copyFrom = arena.allocate(4 * SIZE, 4096);
    copyTo = arena.allocate(4 * SIZE, 4096);
    SplittableRandom rnd = new SplittableRandom(13);
    for (long i = 0; i < src.byteSize() / 4; i++) {
      src.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble() - 0.5) * 0.1f);
    }
    copyFrom.fill((byte) 1);
    dst.fill((byte) 2);
    copyTo.fill((byte) 3);
  }

  @TearDown(Level.Trial)
  public void free() {
    arena.close();
  }

  @Benchmark
  public void cast() {
    Casts.convert(src, 0, from, dst, 0, to, elements);
  }

  @Benchmark
  public void copyDst() {
    MemorySegment.copy(copyFrom, 0, copyTo, 0, elements * to.elementSize());
  }

  @Benchmark
  public void copyTraffic() {
    MemorySegment.copy(copyFrom, 0, copyTo, 0, (SIZE + elements * to.elementSize()) / 2);
  }
}
