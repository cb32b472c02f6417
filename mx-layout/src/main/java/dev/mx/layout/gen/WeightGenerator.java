package dev.mx.layout.gen;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The synthetic weight generator of ARCHITECTURE §5.4. Element {@code i} (row-major flat index) of
 * global tensor {@code N} at step {@code s} is {@code v = float32(((u >>> 40) - 2^23) / 2^24)} with
 * {@code u = splitmix64(fnv1a64(N) ^ (s * 0x9E3779B97F4A7C15) ^ i)}, exactly, in {@code [-0.5,
 * 0.5)}; it is stored as f32, as bf16 or f16 rounded to nearest even, or widened to f64. Fills may
 * scale it by a {@link BlockAmplitude} per tile, for quantization tests; without one (the demo) the
 * bytes are the formula's.
 */
public final class WeightGenerator {
  static final long FNV_OFFSET_BASIS = 0xcbf29ce484222325L;
  static final long FNV_PRIME = 0x100000001b3L;
  static final long GOLDEN_GAMMA = 0x9E3779B97F4A7C15L;

  /**
   * Elements per parallel task: large enough to amortize scheduling, small enough to balance two
   * cores.
   */
  private static final long TASK_ELEMENTS = 1L << 18;

  private WeightGenerator() {}

  /** FNV-1a, 64 bit, over the UTF-8 bytes of {@code name}. */
  public static long fnv1a64(String name) {
    long h = FNV_OFFSET_BASIS;
    for (byte b : name.getBytes(StandardCharsets.UTF_8)) {
      h = (h ^ (b & 0xff)) * FNV_PRIME;
    }
    return h;
  }

  /** One step of Vigna's splitmix64 (the increment, then the finalizer). */
  public static long splitmix64(long x) {
    long z = x + GOLDEN_GAMMA;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** The per-tensor, per-step key: {@code fnv1a64(name) ^ (step * 0x9E3779B97F4A7C15)}. */
  public static long key(String name, long step) {
    return fnv1a64(name) ^ (step * GOLDEN_GAMMA);
  }

  /** The value of element {@code flatIndex} of tensor {@code name} at {@code step}. */
  public static float value(String name, long step, long flatIndex) {
    return valueAt(key(name, step), flatIndex);
  }

  /** The value of element {@code flatIndex} under a precomputed {@link #key}. */
  public static float valueAt(long key, long flatIndex) {
    long u = splitmix64(key ^ flatIndex);
    return (float) ((int) (u >>> 40) - 8388608) * 0x1.0p-24f;
  }

  /**
   * The value of element {@code flatIndex} of tensor {@code name} of {@code shape} at {@code step}
   * under {@code amplitude}: {@code float32(value · amplitude)}.
   */
  public static float value(
      String name, long step, long flatIndex, Shape shape, BlockAmplitude amplitude) {
    return value(name, step, flatIndex) * amplitude.at(name, shape, flatIndex);
  }

  /**
   * The stored bits of element {@code flatIndex} in {@code dtype} (see {@link
   * FloatBits#storedBits}).
   */
  public static long storedBits(String name, long step, long flatIndex, DType dtype) {
    return FloatBits.storedBits(value(name, step, flatIndex), dtype);
  }

  /** Fills one box on the calling thread. */
  public static void fill(BoxFill fill, long step) {
    RunCursor runs = new RunCursor(fill);
    writeRuns(fill, key(fill.tensorName(), step), runs, 0, runs.rowCount());
  }

  /**
   * Fills every box with the values of {@code step}, split into tasks across {@code threads}
   * threads ({@code <= 0}: one per available processor). Returns when every element is written.
   * Targets of a confined arena are filled on the calling thread.
   */
  public static void fill(List<BoxFill> fills, long step, int threads) {
    fill(fills, name -> step, threads);
  }

  /**
   * As {@link #fill(List, long, int)} with each tensor's values of the step {@code stepOf} gives
   * for its name (a {@link ChangeSchedule}'s last-changed step).
   */
  public static void fill(
      List<BoxFill> fills, java.util.function.ToLongFunction<String> stepOf, int threads) {
    fill(fills, stepOf, threads, null);
  }

  /**
   * As {@link #fill(List, java.util.function.ToLongFunction, int)}, every value scaled by {@code
   * amplitude} (null: none). Scaled fills run the scalar formula element by element: they are for
   * tests.
   */
  public static void fill(
      List<BoxFill> fills,
      java.util.function.ToLongFunction<String> stepOf,
      int threads,
      BlockAmplitude amplitude) {
    int n = threads > 0 ? threads : Runtime.getRuntime().availableProcessors();
    Thread other = Thread.ofPlatform().unstarted(() -> {});
    for (BoxFill f : fills) {
      if (!f.target().isAccessibleBy(other)) {
        n = 1;
      }
    }
    List<Runnable> tasks = new ArrayList<>();
    for (BoxFill f : fills) {
      RunCursor runs = new RunCursor(f);
      long key = key(f.tensorName(), stepOf.applyAsLong(f.tensorName()));
      long rowsPerTask = Math.max(1, TASK_ELEMENTS / Math.max(1, runs.runLength()));
      for (long r = 0; r < runs.rowCount(); r += rowsPerTask) {
        long from = r;
        long to = Math.min(runs.rowCount(), r + rowsPerTask);
        tasks.add(
            amplitude == null
                ? () -> writeRuns(f, key, runs, from, to)
                : () -> writeScaledRuns(f, key, amplitude, runs, from, to));
      }
    }
    if (n == 1 || tasks.size() <= 1) {
      tasks.forEach(Runnable::run);
      return;
    }
    try (ExecutorService pool =
        Executors.newFixedThreadPool(Math.min(n, tasks.size()), daemonThreads())) {
      List<Future<?>> futures = new ArrayList<>(tasks.size());
      for (Runnable t : tasks) {
        futures.add(pool.submit(t));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (ExecutionException e) {
      throw new IllegalStateException(
          "weight generator task failed: " + e.getCause(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while generating weights", e);
    }
  }

  private static java.util.concurrent.ThreadFactory daemonThreads() {
    return Thread.ofPlatform().name("mx-weight-gen-", 0).daemon(true).factory();
  }

  /** Writes rows {@code [from, to)} of the box; each row is one contiguous run in both layouts. */
  private static void writeRuns(BoxFill f, long key, RunCursor runs, long from, long to) {
    ChunkKernel k = ChunkKernels.best();
    MemorySegment seg = f.target();
    long len = runs.runLength();
    long[] idx = runs.rowIndex(from);
    for (long row = from; row < to; row++) {
      long src = runs.globalStart(idx);
      long dst = row * len;
      switch (f.dtype()) {
        case F32 -> k.f32(seg, dst, key, src, len);
        case BF16 -> k.bf16(seg, dst, key, src, len);
        case F16 -> k.f16(seg, dst, key, src, len);
        case F64 -> k.f64(seg, dst, key, src, len);
        default ->
            throw new IllegalArgumentException(
                "dtype " + f.dtype() + " cannot store generated weights");
      }
      runs.advance(idx);
    }
  }

  /** As {@link #writeRuns}, each value times its tile's amplitude, one element at a time. */
  private static void writeScaledRuns(
      BoxFill f, long key, BlockAmplitude amplitude, RunCursor runs, long from, long to) {
    MemorySegment seg = f.target();
    DType dtype = f.dtype();
    long seed = BlockAmplitude.seed(f.tensorName());
    long len = runs.runLength();
    long[] idx = runs.rowIndex(from);
    for (long row = from; row < to; row++) {
      long src = runs.globalStart(idx);
      long dst = row * len;
      for (long j = 0; j < len; j++) {
        float v = valueAt(key, src + j) * amplitude.at(seed, f.globalShape(), src + j);
        FloatBits.setBits(seg, dst + j, dtype, FloatBits.storedBits(v, dtype));
      }
      runs.advance(idx);
    }
  }

  /**
   * Whether fills run on the Vector API kernel; {@link #vectorUnavailabilityCause()} says why not.
   */
  public static boolean vectorized() {
    return ChunkKernels.vectorUnavailabilityCause() == null;
  }

  /** Why fills do not use the Vector API kernel, or null when they do. */
  public static Throwable vectorUnavailabilityCause() {
    return ChunkKernels.vectorUnavailabilityCause();
  }

  /**
   * Enumerates a box of a row-major global tensor as rows of one contiguous run each: trailing
   * dimensions the box spans whole merge into the run, the leading ones are iterated in row-major
   * order.
   */
  private static final class RunCursor {
    private final long[] lo;
    private final long[] extent;
    private final long[] globalStrides;
    private final int iterDims;
    private final long runLength;
    private final long rowCount;

    RunCursor(BoxFill f) {
      int n = f.globalShape().rank();
      lo = f.boxOffset();
      extent = f.boxShape().dims();
      globalStrides = f.globalShape().rowMajorStrides();
      int p = n;
      long run = 1;
      // Merge dim p-1 into the run while every dim after it is spanned whole.
      while (p > 0) {
        run *= extent[p - 1];
        p--;
        if (p == 0 || extent[p] != f.globalShape().dim(p)) {
          break;
        }
      }
      iterDims = p;
      runLength = run;
      long rows = 1;
      for (int d = 0; d < p; d++) {
        rows *= extent[d];
      }
      rowCount = run == 0 ? 0 : rows;
    }

    long runLength() {
      return runLength;
    }

    long rowCount() {
      return rowCount;
    }

    /** The mixed-radix index over the iterated dims of row {@code row}. */
    long[] rowIndex(long row) {
      long[] idx = new long[iterDims];
      for (int d = iterDims - 1; d >= 0; d--) {
        idx[d] = row % extent[d];
        row /= extent[d];
      }
      return idx;
    }

    void advance(long[] idx) {
      for (int d = iterDims - 1; d >= 0; d--) {
        if (++idx[d] < extent[d]) {
          return;
        }
        idx[d] = 0;
      }
    }

    /** The global flat index of the first element of the row at {@code idx}. */
    long globalStart(long[] idx) {
      long s = 0;
      for (int d = 0; d < lo.length; d++) {
        s += (lo[d] + (d < iterDims ? idx[d] : 0)) * globalStrides[d];
      }
      return s;
    }
  }
}
