package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import java.time.Duration;

/**
 * Monotonic time and sleeping, replaceable so that deadline logic can be tested without waiting.
 */
@Internal
public interface Ticker {

  /** Monotonic nanoseconds, as {@link System#nanoTime()}. */
  long nanoTime();

  /** Sleeps for {@code duration} (nothing when zero or negative). */
  void sleep(Duration duration) throws InterruptedException;

  /** The system clock and {@link Thread#sleep}. */
  static Ticker system() {
    return SystemTicker.INSTANCE;
  }
}

/** {@link Ticker#system()}. */
enum SystemTicker implements Ticker {
  INSTANCE;

  @Override
  public long nanoTime() {
    return System.nanoTime();
  }

  @Override
  public void sleep(Duration duration) throws InterruptedException {
    if (duration.isPositive()) {
      Thread.sleep(duration);
    }
  }
}
