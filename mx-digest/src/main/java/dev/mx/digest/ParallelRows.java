package dev.mx.digest;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Splits whole rows into contiguous row ranges, sums each range on its own thread and combines the
 * results in order with {@link RowSums#followedBy}, which is exact.
 */
final class ParallelRows {

  /** An unstarted thread: a segment accessible by it is accessible by any thread of an executor. */
  private static final Thread ANY_OTHER_THREAD = Thread.ofPlatform().unstarted(() -> {});

  private ParallelRows() {}

  /**
   * The row sums of {@code rows} whole rows at {@code offset}, in {@code tasks} ranges of
   * near-equal size (at most one per row). Runs on the calling thread when {@code executor} is
   * null, there is one task, or the segment is confined to its owner thread.
   */
  static RowSums sumRows(
      MemorySegment bytes, long offset, long rows, Executor executor, int tasks) {
    RowKernel kernel = RowKernels.forBytes(rows * RowKernel.ROW_BYTES);
    int ranges = (int) Math.min(Math.max(tasks, 1), rows);
    if (ranges <= 1 || executor == null || !bytes.isAccessibleBy(ANY_OTHER_THREAD)) {
      return kernel.sumRows(bytes, offset, rows);
    }
    long base = rows / ranges;
    long extra = rows % ranges;
    List<CompletableFuture<RowSums>> others = new ArrayList<>(ranges - 1);
    long firstRows = base + (extra > 0 ? 1 : 0);
    long start = firstRows;
    for (int i = 1; i < ranges; i++) {
      long count = base + (i < extra ? 1 : 0);
      long at = offset + start * RowKernel.ROW_BYTES;
      others.add(CompletableFuture.supplyAsync(() -> kernel.sumRows(bytes, at, count), executor));
      start += count;
    }
    RowSums result = kernel.sumRows(bytes, offset, firstRows);
    for (CompletableFuture<RowSums> f : others) {
      try {
        result = result.followedBy(f.join());
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException re) {
          throw re;
        }
        if (e.getCause() instanceof Error err) {
          throw err;
        }
        throw e;
      }
    }
    return result;
  }

  /** The shared daemon threads behind {@link ShardDigest#digest(MemorySegment, int)}. */
  static Executor pool() {
    return Pool.EXECUTOR;
  }

  private static final class Pool {
    private static final AtomicInteger COUNT = new AtomicInteger();
    static final ExecutorService EXECUTOR =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "mx-digest-" + COUNT.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
  }
}
