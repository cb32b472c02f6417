package dev.mx.refit.jfr;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metrics.RefitListener;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Times one stage of a refit where it runs: {@link #start} begins a {@link RefitStageEvent} on the
 * calling thread (when a recording wants it) and {@link #stopInto} ends and commits it there, so
 * the event carries the stage's real start and duration, and puts the seconds into the refit's
 * stage map for the metrics and the listeners. The rank and step come from the refit this thread
 * runs ({@link #enter}); outside one (an explicit {@code prepare()}) the step is -1.
 */
@Internal
public final class StageClock {
  private static final ThreadLocal<RefitListener.Refit> CURRENT = new ThreadLocal<>();

  /** Names of the stages timed here: the JFR listener leaves their events to this class. */
  private static final Set<String> TIMED_AT_SITE = ConcurrentHashMap.newKeySet();

  private final String stage;
  private final long startNanos;
  private final RefitStageEvent event;

  private StageClock(String stage, RefitStageEvent event) {
    this.stage = stage;
    this.event = event;
    this.startNanos = System.nanoTime();
  }

  /** The refit this thread runs until the scope closes (restores the one before). */
  public static Scope enter(RefitListener.Refit refit) {
    RefitListener.Refit before = CURRENT.get();
    CURRENT.set(refit);
    return () -> {
      if (before == null) {
        CURRENT.remove();
      } else {
        CURRENT.set(before);
      }
    };
  }

  /** Starts timing {@code stage} (a stage-map key such as {@code install_s}) now. */
  public static StageClock start(String stage) {
    TIMED_AT_SITE.add(stage);
    RefitStageEvent e = new RefitStageEvent();
    if (!e.isEnabled()) {
      return new StageClock(stage, null);
    }
    e.begin();
    return new StageClock(stage, e);
  }

  /** Whether {@code stage} is timed by a clock where it runs (its events come from there). */
  public static boolean timesAtSite(String stage) {
    return TIMED_AT_SITE.contains(stage);
  }

  /** Ends the stage: commits its event and returns its seconds. */
  public double stop() {
    long nanos = System.nanoTime() - startNanos;
    if (event != null) {
      event.end();
      if (event.shouldCommit()) {
        RefitListener.Refit refit = CURRENT.get();
        event.rank = refit == null ? -1 : refit.rank();
        event.step = refit == null ? -1 : refit.step();
        event.stage = stage;
        event.stageTime = nanos;
        event.commit();
      }
    }
    return nanos / 1e9;
  }

  /** Ends the stage and puts its seconds into {@code stages} under its name. */
  public void stopInto(Map<String, Double> stages) {
    stages.put(stage, stop());
  }

  /** The span of {@link #enter}: closing it never throws. */
  @FunctionalInterface
  public interface Scope extends AutoCloseable {
    @Override
    void close();
  }
}
