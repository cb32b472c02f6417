package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

/**
 * Maps a list on every core, keeping its order: a receiver checks and decodes one shard table per
 * trainer rank (256 at Kimi-K2 scale, 99 MB of JSON), work that is independent per table and was
 * the largest part of fetching a version on one thread.
 */
@Internal
public final class ParallelMap {
  private ParallelMap() {}

  /**
   * {@code fn} applied to each item, results in the items' order. Every item runs on its own
   * virtual thread (the JVM schedules them on one carrier per core); the call returns once all have
   * ended, so nothing runs on after it. A failure is rethrown as thrown, the earliest in list order
   * when several fail, so the error a caller reports does not depend on timing. Results may be
   * null.
   */
  public static <T, R> List<R> inOrder(List<T> items, Function<? super T, ? extends R> fn) {
    List<R> out = new ArrayList<>(items.size());
    if (items.size() == 1) {
      out.add(fn.apply(items.getFirst()));
      return out;
    }
    List<Future<R>> futures = new ArrayList<>(items.size());
    try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
      for (T item : items) {
        futures.add(threads.submit(() -> fn.apply(item)));
      }
    }
    for (Future<R> f : futures) {
      try {
        out.add(f.get());
      } catch (ExecutionException e) {
        switch (e.getCause()) {
          case RuntimeException r -> throw r;
          case Error err -> throw err;
          default -> throw new IllegalStateException(e.getCause());
        }
      } catch (CancellationException | InterruptedException e) {
        // The caller was interrupted while the items ran: closing the executor cancelled the rest
        // and set the interrupt again.
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while mapping " + items.size() + " items", e);
      }
    }
    return out;
  }
}
