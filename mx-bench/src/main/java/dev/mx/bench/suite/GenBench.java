package dev.mx.bench.suite;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.layout.gen.BoxFill;
import dev.mx.layout.gen.WeightGenerator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The synthetic weight generator (ARCHITECTURE §5.4) filling 256 MiB of trainer buffers, against
 * {@link MemorySegment#fill} of the same bytes on the same number of threads (memory speed for
 * writes).
 */
public final class GenBench implements Benchmark {
  private static final long MIB = 1 << 20;

  @Override
  public String name() {
    return "gen";
  }

  @Override
  public String description() {
    return "weight generator: bf16 and f32 fills of 256 MiB vs MemorySegment.fill on the same threads";
  }

  @Override
  public List<BenchResult> run(BenchOptions options) throws Exception {
    long size = 256 * MIB;
    int threads = options.effectiveThreads();
    List<BenchResult> out = new ArrayList<>();
    try (Arena arena = Arena.ofShared();
        ExecutorService pool = Executors.newFixedThreadPool(threads)) {
      MemorySegment seg = arena.allocate(size, 4096);
      for (DType dtype : List.of(DType.BF16, DType.F32)) {
        // A 2-D tensor filled through a column box, as a row-parallel shard would be: runs of 4096
        // elements.
        long cols = 8192;
        long rows = size / dtype.elementSize() / (cols / 2);
        Shape global = Shape.of(rows, cols);
        BoxFill fill =
            new BoxFill(
                seg,
                dtype,
                "model.layers.0.mlp.down_proj.weight",
                global,
                new long[] {0, cols / 2},
                Shape.of(rows, cols / 2));
        options
            .progress()
            .println(
                "gen bench: "
                    + dtype
                    + " fill of "
                    + size / MIB
                    + " MiB on "
                    + threads
                    + " thread(s) ...");
        double[] t =
            Measure.interleavedMedians(
                1,
                options.repetitions(),
                () -> WeightGenerator.fill(List.of(fill), 1, threads),
                () -> parallelFill(pool, seg, threads));
        out.add(
            new BenchResult(
                "gen_fill_" + dtype.shortName() + "_GBps",
                size / t[0] / 1e9,
                "GB/s",
                "memorysegment_fill_GBps",
                size / t[1] / 1e9));
      }
    }
    return out;
  }

  private static void parallelFill(ExecutorService pool, MemorySegment seg, int threads)
      throws Exception {
    long chunk = (seg.byteSize() + threads - 1) / threads;
    List<Future<?>> fs = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      long off = Math.min(seg.byteSize(), i * chunk);
      long len = Math.min(chunk, seg.byteSize() - off);
      byte value = (byte) i;
      fs.add(pool.submit(() -> seg.asSlice(off, len).fill(value)));
    }
    for (Future<?> f : fs) {
      f.get();
    }
  }
}
