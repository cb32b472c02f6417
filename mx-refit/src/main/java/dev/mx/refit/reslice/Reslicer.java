package dev.mx.refit.reslice;

import dev.mx.api.annotation.Internal;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * Runs many compiled copies. When their destinations are provably disjoint (ModelExpress' span
 * test) the copies are a batch: order does not matter, so they are split into pieces and run in
 * parallel. When two destinations might overlap, they run one after another in captured order, so
 * the later copy wins as it would in the engine's own loader.
 */
@Internal
public final class Reslicer {
  /** Pieces smaller than this are not split further; a piece is one task of the batch. */
  private static final long MIN_PIECE_BYTES = 1L << 20;

  private Reslicer() {}

  /**
   * The span test: each destination view spans {@code [(offset + Σ min(0,(size-1)·stride))·elsize,
   * (offset + Σ max(0,(size-1)·stride) + 1)·elsize)} of its storage (absolute addresses here, so
   * distinct storages never collide); empty views are ignored; after sorting, any span starting
   * before the furthest end seen so far means "might overlap". Conservative: interleaved but
   * disjoint views count as overlapping.
   */
  public static boolean destinationsDisjoint(List<ViewCopy> copies) {
    List<long[]> spans = new ArrayList<>(copies.size());
    for (ViewCopy c : copies) {
      AsStrided v = c.destinationView();
      if (v.numel() == 0) {
        continue;
      }
      long size = c.destinationType().elementSize();
      long base = c.destination().address();
      spans.add(new long[] {base + v.minElement() * size, base + (v.maxElement() + 1) * size});
    }
    spans.sort((a, b) -> Long.compareUnsigned(a[0], b[0]));
    long furthest = Long.MIN_VALUE;
    boolean first = true;
    for (long[] s : spans) {
      if (!first && Long.compareUnsigned(s[0], furthest) < 0) {
        return false;
      }
      furthest = first ? s[1] : (Long.compareUnsigned(s[1], furthest) > 0 ? s[1] : furthest);
      first = false;
    }
    return true;
  }

  /** Runs every copy on the calling thread, in order. */
  public static void runSequential(List<ViewCopy> copies) {
    for (ViewCopy c : copies) {
      c.run();
    }
  }

  /**
   * Runs copies whose destinations are disjoint as one batch on {@code executor} ({@code
   * parallelism} workers), splitting large copies along their runs. Falls back to the calling
   * thread when {@code parallelism <= 1}. The caller must have checked {@link
   * #destinationsDisjoint}.
   */
  public static void runBatched(List<ViewCopy> copies, ExecutorService executor, int parallelism) {
    long total = 0;
    for (ViewCopy c : copies) {
      total += c.destinationBytes();
    }
    if (executor == null || parallelism <= 1 || total < 2 * MIN_PIECE_BYTES) {
      runSequential(copies);
      return;
    }
    long target = Math.max(MIN_PIECE_BYTES, total / (4L * parallelism));
    List<Runnable> pieces = new ArrayList<>();
    for (ViewCopy c : copies) {
      long runs = c.runCount();
      if (runs == 0) {
        continue;
      }
      long bytesPerRun = Math.max(1, c.destinationBytes() / runs);
      long runsPerPiece = Math.max(1, target / bytesPerRun);
      for (long r = 0; r < runs; r += runsPerPiece) {
        long from = r;
        long end = Math.min(runs, r + runsPerPiece);
        pieces.add(() -> c.run(from, end));
      }
    }
    runAll(pieces, executor);
  }

  /**
   * Runs tasks on the executor and waits for all; the first failure is rethrown with the rest
   * suppressed.
   */
  public static void runAll(List<Runnable> tasks, ExecutorService executor) {
    List<Future<?>> futures = new ArrayList<>(tasks.size());
    for (Runnable t : tasks) {
      futures.add(executor.submit(t));
    }
    RuntimeException failure = null;
    for (Future<?> f : futures) {
      try {
        f.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failure =
            addFailure(
                failure,
                new IllegalStateException("interrupted while waiting for local copies", e));
      } catch (ExecutionException e) {
        Throwable cause = e.getCause();
        failure =
            addFailure(
                failure,
                cause instanceof RuntimeException re
                    ? re
                    : new IllegalStateException("a local copy failed: " + cause, cause));
      }
    }
    if (failure != null) {
      throw failure;
    }
  }

  private static RuntimeException addFailure(RuntimeException first, RuntimeException next) {
    if (first == null) {
      return next;
    }
    first.addSuppressed(next);
    return first;
  }

  /** Human-readable list of the copies, for logs. */
  public static String describe(List<ViewCopy> copies) {
    return Arrays.toString(copies.toArray());
  }
}
