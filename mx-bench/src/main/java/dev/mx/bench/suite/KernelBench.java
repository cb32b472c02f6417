package dev.mx.bench.suite;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.refit.cast.BlockQuantizer;
import dev.mx.refit.cast.Casts;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.cast.QuantFormat;
import dev.mx.refit.reslice.AsStrided;
import dev.mx.refit.reslice.Reslicer;
import dev.mx.refit.reslice.ViewCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The receiver's element kernels against {@link MemorySegment#copy}, interleaved in the same run,
 * single thread: every cast pair between f32, bf16, f16, f8_e4m3fn, f8_e5m2 (and f64 to and from
 * f32) on a 64 MiB source, and re-slices (a narrow into a contiguous parameter, runs of 8 KiB, 1
 * KiB and 256 B; one whole 64 MiB run). A cast is compared two ways: with a copy of its destination
 * bytes (RefitBench's rule) and with a copy moving the same memory traffic, (source + destination)
 * / 2 bytes, since a copy of B bytes reads and writes B. Wall and CPU clocks; CPU leaves out time
 * the shared machine gave to others. Size with {@code -Dmx.bench.kernels.mib} (default 64); pick
 * kernels with {@code -Dmx.bench.kernels.only=SUBSTRING}. FP8 block quantization of bf16 (128 x 128
 * tiles, with and without measuring its error) is compared with a copy of its bf16 input.
 */
public final class KernelBench implements Benchmark {
  private static final long MIB = 1L << 20;
  private static final int WARMUPS = 6;
  private static final DType[][] CASTS = {
    {DType.BF16, DType.F32},
    {DType.F32, DType.BF16},
    {DType.F16, DType.F32},
    {DType.F32, DType.F16},
    {DType.F32, DType.F8_E4M3FN},
    {DType.F8_E4M3FN, DType.F32},
    {DType.BF16, DType.F8_E4M3FN},
    {DType.F8_E4M3FN, DType.BF16},
    {DType.BF16, DType.F16},
    {DType.F16, DType.BF16},
    {DType.F32, DType.F8_E5M2},
    {DType.F8_E5M2, DType.BF16},
    {DType.F64, DType.F32},
    {DType.F32, DType.F64},
  };

  @Override
  public String name() {
    return "kernels";
  }

  @Override
  public String description() {
    return "casts and re-slices vs MemorySegment.copy of the same bytes, 64 MiB, single thread";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    long size = Long.getLong("mx.bench.kernels.mib", 64) * MIB;
    List<BenchResult> out = new ArrayList<>();
    options
        .progress()
        .printf(
            "kernels bench: %d MiB, vector casts %s%n",
            size / MIB,
            Casts.vectorized() ? "on" : "off (" + Casts.vectorUnavailabilityCause() + ")");
    try (Arena arena = Arena.ofShared()) {
      MemorySegment src = arena.allocate(2 * size, 4096);
      MemorySegment dst = arena.allocate(4 * size, 4096);
      MemorySegment copyFrom = arena.allocate(4 * size, 4096);
      MemorySegment copyTo = arena.allocate(4 * size, 4096);
      fill(src);
      copyFrom.fill((byte) 1);
      copyTo.fill((byte) 2);
      dst.fill((byte) 3);
      for (DType[] pair : CASTS) {
        if (!selected("cast_" + pair[0].shortName() + "_to_" + pair[1].shortName())) {
          continue;
        }
        out.addAll(cast(options, src, dst, copyFrom, copyTo, pair[0], pair[1], size));
      }
      for (boolean measure : new boolean[] {false, true}) {
        String name = "fp8_block_quantize_bf16" + (measure ? "_with_error" : "");
        if (selected(name)) {
          out.addAll(
              fp8Block(
                  options,
                  name,
                  src,
                  dst,
                  copyFrom,
                  copyTo,
                  size,
                  measure,
                  1,
                  QuantFormat.BLOCK,
                  Fp8Rounding.EXACT));
        }
        String threaded = name + "_threads";
        if (selected(threaded)) {
          // As a receiver's install runs it: on every core (--threads), against a one-thread copy.
          out.addAll(
              fp8Block(
                  options,
                  threaded,
                  src,
                  dst,
                  copyFrom,
                  copyTo,
                  size,
                  measure,
                  options.effectiveThreads(),
                  QuantFormat.BLOCK,
                  Fp8Rounding.EXACT));
        }
      }
      // Every quantized format as an install runs it: every core, the default (vLLM) rounding.
      for (QuantFormat format : QuantFormat.values()) {
        String name = "quantize_bf16_to_" + format.label().replace('-', '_') + "_threads";
        if (selected(name)) {
          out.addAll(
              fp8Block(
                  options,
                  name,
                  src,
                  dst,
                  copyFrom,
                  copyTo,
                  size,
                  false,
                  options.effectiveThreads(),
                  format,
                  Fp8Rounding.VLLM));
        }
      }
      // Re-slice: a narrow of dim 1 of a [rows, 2 * run] staged f32 source into a contiguous [rows,
      // run].
      for (long runBytes : new long[] {8192, 1024, 256}) {
        if (!selected("reslice_narrow_" + runBytes + "B_runs")) {
          continue;
        }
        long rows = size / runBytes;
        long cols = runBytes / 4;
        ViewCopy narrow =
            ViewCopy.compile(
                "bench narrow",
                src,
                DType.F32,
                new AsStrided(0, new long[] {rows, cols}, new long[] {2 * cols, 1}),
                dst,
                DType.F32,
                AsStrided.contiguous(Shape.of(rows, cols)));
        out.addAll(
            pair(
                options,
                "reslice_narrow_" + runBytes + "B_runs",
                size,
                () -> Reslicer.runSequential(List.of(narrow)),
                () -> MemorySegment.copy(copyFrom, 0, copyTo, 0, size)));
      }
      if (!selected("reslice_whole_run")) {
        return out;
      }
      ViewCopy whole =
          ViewCopy.compile(
              "bench whole",
              src,
              DType.F32,
              AsStrided.contiguous(Shape.of(size / 4)),
              dst,
              DType.F32,
              AsStrided.contiguous(Shape.of(size / 4)));
      out.addAll(
          pair(
              options,
              "reslice_whole_run",
              size,
              whole::run,
              () -> MemorySegment.copy(copyFrom, 0, copyTo, 0, size)));
    }
    return out;
  }

  /**
   * Whether {@code -Dmx.bench.kernels.only} (a substring of kernel names, empty for all) selects
   * this kernel.
   */
  private static boolean selected(String kernel) {
    return kernel.contains(System.getProperty("mx.bench.kernels.only", ""));
  }

  private static List<BenchResult> cast(
      BenchOptions options,
      MemorySegment src,
      MemorySegment dst,
      MemorySegment copyFrom,
      MemorySegment copyTo,
      DType from,
      DType to,
      long srcBytes)
      throws Exception {
    long n = srcBytes / from.elementSize();
    long dstBytes = n * to.elementSize();
    long traffic = (srcBytes + dstBytes) / 2;
    String name = "cast_" + from.shortName() + "_to_" + to.shortName();
    options.progress().printf("kernels bench: %s ...%n", name);
    Measure.Action cast = () -> Casts.convert(src, 0, from, dst, 0, to, n);
    List<BenchResult> out = new ArrayList<>();
    double[] vsDst =
        interleaved(
            WARMUPS,
            options.repetitions(),
            cast,
            () -> MemorySegment.copy(copyFrom, 0, copyTo, 0, dstBytes));
    out.add(rate(name + "_vs_dst_copy_GBps", dstBytes, vsDst[0], vsDst[1]));
    double[] vsTraffic =
        interleaved(
            1,
            options.repetitions(),
            cast,
            () -> MemorySegment.copy(copyFrom, 0, copyTo, 0, traffic));
    out.add(rate(name + "_vs_equal_traffic_copy_GBps", traffic, vsTraffic[0], vsTraffic[1]));
    out.add(rate(name + "_vs_equal_traffic_copy_cpu_GBps", traffic, vsTraffic[2], vsTraffic[3]));
    return out;
  }

  /**
   * FP8 quantization into {@code format} (block formats: 128 x 128 tiles) of a [rows, 4096] bf16
   * weight of {@code srcBytes}, against a copy of the same bf16 bytes: issue 24's "GB/s of bf16
   * input / warm copy" ratio.
   */
  private static List<BenchResult> fp8Block(
      BenchOptions options,
      String name,
      MemorySegment src,
      MemorySegment dst,
      MemorySegment copyFrom,
      MemorySegment copyTo,
      long srcBytes,
      boolean measure,
      int threads,
      QuantFormat format,
      Fp8Rounding rounding)
      throws Exception {
    long cols = 4096;
    long rows = srcBytes / 2 / cols;
    Shape shape = Shape.of(rows, cols);
    long codes = rows * cols;
    MemorySegment scales = dst.asSlice(codes);
    return pair(
        options,
        name,
        2 * codes,
        () ->
            BlockQuantizer.quantize(
                src,
                DType.BF16,
                dst,
                scales,
                shape,
                format,
                BlockQuantizer.DEFAULT_BLOCK,
                measure,
                threads,
                rounding),
        () -> MemorySegment.copy(copyFrom, 0, copyTo, 0, 2 * codes));
  }

  private static List<BenchResult> pair(
      BenchOptions options, String name, long bytes, Measure.Action kernel, Measure.Action copy)
      throws Exception {
    options.progress().printf("kernels bench: %s ...%n", name);
    double[] t = interleaved(WARMUPS, options.repetitions(), kernel, copy);
    return List.of(
        rate(name + "_GBps", bytes, t[0], t[1]), rate(name + "_cpu_GBps", bytes, t[2], t[3]));
  }

  /**
   * Alternates kernel and copy runs after warm-ups (enough for C2 to compile the vector loops);
   * returns the medians {kernel wall, copy wall, kernel CPU, copy CPU}. CPU is the calling thread's
   * own clock, so the JIT's and GC's threads, busy right after a new kernel first runs, are not
   * charged to it.
   */
  private static double[] interleaved(
      int warmups, int reps, Measure.Action kernel, Measure.Action copy) throws Exception {
    for (int i = 0; i < warmups; i++) {
      copy.run();
      kernel.run();
    }
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    double[][] t = new double[4][reps];
    for (int i = 0; i < reps; i++) {
      for (int k = 1; k >= 0; k--) {
        long cpu = threads.getCurrentThreadCpuTime();
        long start = System.nanoTime();
        (k == 0 ? kernel : copy).run();
        t[k][i] = (System.nanoTime() - start) / 1e9;
        t[k + 2][i] = (threads.getCurrentThreadCpuTime() - cpu) / 1e9;
      }
    }
    double[] medians = new double[4];
    for (int k = 0; k < 4; k++) {
      Arrays.sort(t[k]);
      medians[k] = t[k][reps / 2];
    }
    return medians;
  }

  private static BenchResult rate(String metric, long bytes, double kernelS, double copyS) {
    return new BenchResult(
        metric, bytes / kernelS / 1e9, "GB/s", "memorysegment_copy_GBps", bytes / copyS / 1e9);
  }

  /** Normal-ish f32 weights, so every cast meets ordinary values (and, read as fp8, every code). */
  private static void fill(MemorySegment seg) {
    SplittableRandom rnd = new SplittableRandom(13);
    long n = seg.byteSize() / 4;
    for (long i = 0; i < n; i++) {
      seg.setAtIndex(ValueLayout.JAVA_FLOAT, i, (float) (rnd.nextDouble() - 0.5) * 0.1f);
    }
  }
}
