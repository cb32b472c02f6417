package dev.mx.testing;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assertions;

/**
 * Waits in tests for the event a test checks, instead of sleeping and asserting at one instant: a
 * condition is polled (every millisecond at first, backing off to {@link #MAX_POLL}) until it holds
 * or a generous liveness bound passes, which fails naming what was awaited. The bound is not a
 * timing assertion: a loaded machine only takes longer to get there, so pick it many times what a
 * quiet machine needs.
 */
public final class Eventually {
  /** The longest pause between two polls. */
  public static final Duration MAX_POLL = Duration.ofMillis(50);

  /**
   * The bound for waits on a process that starts JVMs (a demo launching its workers, a command
   * opening its input): a quiet machine needs a few seconds, but at load 30 (20 busy processes and
   * two other builds on two cores) a demo took more than a minute to start its first worker.
   */
  public static final Duration PROCESS_START = Duration.ofMinutes(5);

  private Eventually() {}

  /**
   * Returns once {@code condition} is true.
   *
   * @throws AssertionError naming {@code what} when it is still false after {@code bound}
   */
  public static void await(Duration bound, String what, BooleanSupplier condition) {
    await(bound, what, () -> condition.getAsBoolean() ? Boolean.TRUE : null);
  }

  /**
   * Returns the first non-null value {@code probe} gives.
   *
   * @throws AssertionError naming {@code what} when it gave only null for {@code bound}
   */
  public static <T> T await(Duration bound, String what, Supplier<T> probe) {
    long deadline = System.nanoTime() + bound.toNanos();
    long pauseNanos = TimeUnit.MILLISECONDS.toNanos(1);
    while (true) {
      T value = probe.get();
      if (value != null) {
        return value;
      }
      if (System.nanoTime() - deadline > 0) {
        return Assertions.fail("still waiting for " + what + " after " + bound);
      }
      try {
        TimeUnit.NANOSECONDS.sleep(pauseNanos);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return Assertions.fail("interrupted while waiting for " + what, e);
      }
      pauseNanos = Math.min(pauseNanos * 2, MAX_POLL.toNanos());
    }
  }

  /** A probe of the state waited for; may fail (a directory listing). */
  @FunctionalInterface
  public interface Probe<T> {
    T get() throws Exception;
  }

  /**
   * Probes {@code probe} until {@code done} accepts its value or {@code bound} passed, and returns
   * the last value probed, for the assertion that follows to show (it does not fail by itself).
   */
  public static <T> T until(
      Probe<T> probe, java.util.function.Predicate<? super T> done, Duration bound)
      throws Exception {
    long deadline = System.nanoTime() + bound.toNanos();
    long pauseNanos = TimeUnit.MILLISECONDS.toNanos(1);
    T value = probe.get();
    while (!done.test(value) && System.nanoTime() - deadline < 0) {
      TimeUnit.NANOSECONDS.sleep(pauseNanos);
      pauseNanos = Math.min(pauseNanos * 2, MAX_POLL.toNanos());
      value = probe.get();
    }
    return value;
  }
}
