package dev.mx.bench;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.refit.reslice.AsStrided;
import dev.mx.refit.reslice.ViewCopy;
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
 * Re-slice against its baseline: {@code reslice} moves 64 MiB as a narrow of {@code runBytes} runs
 * out of a staged f32 source twice as wide into a contiguous parameter; {@code copySrc} copies 64
 * MiB with one {@link MemorySegment#copy}. Ratio = copy time / re-slice time. The single-JVM sweep
 * with interleaved baselines is {@code ./mx bench kernels} (KernelBench).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
    value = 1,
    jvmArgsAppend = {"--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"})
public class ResliceBenchmark {
  private static final long SIZE = 64L << 20;

  @Param({"8192", "1024", "256"})
  public long runBytes;

  private Arena arena;
  private MemorySegment src;
  private MemorySegment dst;
  private MemorySegment copyFrom;
  private MemorySegment copyTo;
  private ViewCopy narrow;

  @Setup(Level.Trial)
  @SuppressWarnings("MustBeClosedChecker") // closed in the @TearDown method
  public void allocate() {
    arena = Arena.ofShared();
    src = arena.allocate(2 * SIZE, 4096);
    dst = arena.allocate(SIZE, 4096);
    copyFrom = arena.allocate(SIZE, 4096);
    copyTo = arena.allocate(SIZE, 4096);
    SplittableRandom rnd = new SplittableRandom(13);
    for (long i = 0; i < src.byteSize() / 4; i++) {
      src.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble() - 0.5) * 0.1f);
    }
    copyFrom.fill((byte) 1);
    dst.fill((byte) 2);
    copyTo.fill((byte) 3);
    long cols = runBytes / 4;
    long rows = SIZE / runBytes;
    narrow =
        ViewCopy.compile(
            "bench narrow",
            src,
            DType.F32,
            new AsStrided(0, new long[] {rows, cols}, new long[] {2 * cols, 1}),
            dst,
            DType.F32,
            AsStrided.contiguous(Shape.of(rows, cols)));
  }

  @TearDown(Level.Trial)
  public void free() {
    arena.close();
  }

  @Benchmark
  public void reslice() {
    narrow.run();
  }

  @Benchmark
  public void copySrc() {
    MemorySegment.copy(copyFrom, 0, copyTo, 0, SIZE);
  }
}
