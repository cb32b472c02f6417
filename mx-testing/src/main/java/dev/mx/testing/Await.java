package dev.mx.testing;

import java.time.Duration;
import java.util.function.Predicate;

/**
 * Waiting in tests for the event a test checks, instead of asserting at one instant: another
 * process exits, a peer's files are reclaimed, a state is written a moment after the call that
 * caused it. The bound is a generous liveness limit, not a timing expectation.
 */
public final class Await {
  private static final long POLL_MILLIS = 20;

  private Await() {}

  /** A probe of the state waited for; may fail (a directory listing). */
  @FunctionalInterface
  public interface Probe<T> {
    T get() throws Exception;
  }

  /**
   * Probes {@code probe} until {@code done} accepts its value or {@code bound} passed, and returns
   * the last value probed, for the assertion that follows to show.
   */
  public static <T> T until(Probe<T> probe, Predicate<? super T> done, Duration bound)
      throws Exception {
    long deadline = System.nanoTime() + bound.toNanos();
    T value = probe.get();
    while (!done.test(value) && System.nanoTime() - deadline < 0) {
      Thread.sleep(POLL_MILLIS);
      value = probe.get();
    }
    return value;
  }
}
