package dev.mx.refit.embed;

import dev.mx.api.annotation.Stable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.function.Consumer;

/**
 * The commit-or-roll-back rule across the inference ranks of one job: a step becomes live on any
 * rank only once every rank refit and verified it ({@link #commitAll} after {@link #onAll}), so one
 * failing rank leaves every rank on the previous step. In place, a rank may already have written
 * the failed step: {@link #rollBackAll} puts every rank back on the last committed step where the
 * trainers still hold it and says which ranks are left torn.
 */
@Stable
public final class StepCoordinator {

  /** One inference rank as the coordinator drives it, in this process or another. */
  public interface Rank {
    /** E.g. {@code receiver 0}, for notes. */
    String name();

    /** Makes the verified {@code step} live ({@link InferenceRank#commit}). */
    Map<String, Object> commit(long step) throws Exception;

    /** Puts the rank back on step {@code to} ({@link InferenceRank#rollback}). */
    Map<String, Object> rollback(long to) throws Exception;

    /** False once the rank's process is gone: it is not asked anything. */
    default boolean isAlive() {
      return true;
    }
  }

  /** One call of {@link #onAll} on one rank. */
  @FunctionalInterface
  public interface Call<W, R> {
    R on(W rank) throws Exception;
  }

  private final ExecutorService pool;

  /** A coordinator issuing the calls to all ranks at once on {@code pool}. */
  public StepCoordinator(ExecutorService pool) {
    this.pool = Objects.requireNonNull(pool, "pool");
  }

  /**
   * Runs {@code call} on every rank at once and waits for all; the first failure (in rank order) is
   * thrown with the others suppressed.
   */
  public <W, R> List<R> onAll(List<W> ranks, Call<W, R> call) throws Exception {
    List<Future<R>> futures = new ArrayList<>();
    for (W w : ranks) {
      futures.add(pool.submit(() -> call.on(w)));
    }
    List<R> results = new ArrayList<>();
    Exception first = null;
    for (Future<R> f : futures) {
      try {
        results.add(f.get());
      } catch (ExecutionException e) {
        Exception c = e.getCause() instanceof Exception ex ? ex : e;
        if (first == null) {
          first = c;
        } else {
          first.addSuppressed(c);
        }
      }
    }
    if (first != null) {
      throw first;
    }
    return results;
  }

  /** Commits {@code step} on every rank, once every rank verified it; results in rank order. */
  public List<Map<String, Object>> commitAll(List<? extends Rank> ranks, long step)
      throws Exception {
    return onAll(ranks, r -> r.commit(step));
  }

  /**
   * After a failed step, asks every live rank to be back on step {@code to} and returns where each
   * one's weights are: {@code rank}, {@code state} ({@code whole}, {@code torn}, {@code exited} or
   * {@code unknown} when it could not answer) and {@code step}. Best effort, one rank at a time;
   * {@code notes} hears each rank that restored, tore or failed to answer.
   */
  public static List<Map<String, Object>> rollBackAll(
      List<? extends Rank> ranks, long to, Consumer<String> notes) {
    List<Map<String, Object>> states = new ArrayList<>();
    for (int rank = 0; rank < ranks.size(); rank++) {
      Rank w = ranks.get(rank);
      Map<String, Object> state = new LinkedHashMap<>();
      state.put("rank", rank);
      if (!w.isAlive()) {
        state.put("state", "exited");
        states.add(state);
        continue;
      }
      try {
        Map<String, Object> r = w.rollback(to);
        state.put("step", r.get("step"));
        if (r.get("torn") != null) {
          // A mix of steps: the failed one's, or a failed restore's.
          state.put("state", "torn");
          notes.accept(w.name() + ": live weights torn");
        } else {
          state.put("state", "whole");
          if (r.get("rollback_s") != null) {
            notes.accept(w.name() + ": back on step " + r.get("step"));
          }
        }
      } catch (Exception e) {
        state.put("state", "unknown");
        notes.accept(w.name() + ": no rollback: " + e.getMessage());
      }
      states.add(state);
    }
    return states;
  }
}
