package dev.mx.refit;

import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.util.Closeables;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.ShardStaging;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Everything a successful prepare produced, fixed from then on (only each buffer set's descriptor
 * cache changes); it owns the native buffers, registrations and worker threads, released by {@link
 * #close()} in reverse order of creation.
 *
 * @param found the publishers' tables the plan was made from
 * @param plan the plan, before shard staging
 * @param staging the plan with its staged shards (the wire plan)
 * @param prepareStages the prepare's stage times, reported by the refit that prepared
 * @param descriptors builds each refit's reads into a buffer set
 * @param sets the receive buffer sets (two when double buffering)
 * @param probe in place: where the peer probe reads, beside the live weights; else null
 * @param stagingBudget the staging budget the waves were cut for
 * @param workers the worker pool, or null with one thread
 * @param threads the workers' count
 * @param sourcesExact sources read exactly
 * @param sourcesStaged sources with shards staged
 * @param sourcesFull sources pulled whole
 * @param usedSources the sources some copy of this receiver reads
 */
record PreparedPlan(
    DiscoveredSources found,
    Capture capture,
    TransferPlan plan,
    ShardStaging.Result staging,
    Coverage coverage,
    Map<String, Double> prepareStages,
    NativeBuffers buffers,
    DescriptorStage descriptors,
    List<BufferSet> sets,
    MemorySegment probe,
    long stagingBudget,
    ExecutorService workers,
    int threads,
    int sourcesExact,
    int sourcesStaged,
    int sourcesFull,
    List<String> usedSources,
    Lazy<DeltaState.SourceIndex> sourceIndex,
    Lazy<List<String>> keepable)
    implements AutoCloseable {

  /** A value computed on first use (only delta steps ask), then kept. */
  static final class Lazy<T> implements java.util.function.Supplier<T> {
    private final java.util.function.Supplier<T> compute;
    private T value;

    Lazy(java.util.function.Supplier<T> compute) {
      this.compute = compute;
    }

    @Override
    public synchronized T get() {
      if (value == null) {
        value = compute.get();
      }
      return value;
    }
  }

  /** Which source each read comes from. */
  static Lazy<DeltaState.SourceIndex> sourceIndexOf(DiscoveredSources found) {
    return new Lazy<>(() -> new DeltaState.SourceIndex(found.sources()));
  }

  /**
   * The used sources a delta step may keep: not those replayed out of full-pull or convert staging,
   * which the re-slice and cast stages copy every step (and which another receiver sharing the live
   * weights may never have filled).
   */
  static Lazy<List<String>> keepableOf(
      ShardStaging.Result staging,
      List<String> usedSources,
      java.util.function.Supplier<DeltaState.SourceIndex> sourceIndex) {
    return new Lazy<>(
        () -> {
          TransferPlan wire = staging.wirePlan();
          Set<String> replayed = new HashSet<>();
          wire.fullPulls().forEach(f -> replayed.add(f.srcName()));
          for (ConvertSource c : wire.converts()) {
            c.segments().forEach(seg -> replayed.add(sourceIndex.get().sourceOf(seg)));
          }
          for (ShardStaging.Staged st : staging.staged()) {
            if (!st.convertRuns().isEmpty()) {
              replayed.add(st.source());
            }
          }
          return usedSources.stream().filter(n -> !replayed.contains(n)).toList();
        });
  }

  @Override
  public void close() {
    closeAll(sets, workers, buffers);
  }

  /** Closes what a prepare made, in reverse order of creation: verifiers, workers, buffers. */
  static void closeAll(List<BufferSet> sets, ExecutorService workers, NativeBuffers buffers) {
    List<AutoCloseable> order = new ArrayList<>();
    for (int i = sets.size() - 1; i >= 0; i--) {
      order.add(sets.get(i).verifier);
    }
    if (workers != null) {
      order.add(
          () -> {
            workers.shutdown();
            if (!workers.awaitTermination(30, TimeUnit.SECONDS)) {
              workers.shutdownNow();
            }
          });
    }
    order.add(buffers);
    Closeables.closeAll(order);
  }
}
