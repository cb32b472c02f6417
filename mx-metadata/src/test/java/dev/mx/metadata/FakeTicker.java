package dev.mx.metadata;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Test double of {@link Ticker}: time moves only when a test or a sleep moves it; sleeps are
 * recorded.
 */
final class FakeTicker implements Ticker {
  long now = 1_000_000_000L;
  final List<Duration> sleeps = new ArrayList<>();
  Runnable onSleep = () -> {};

  @Override
  public long nanoTime() {
    return now;
  }

  @Override
  public void sleep(Duration duration) {
    sleeps.add(duration);
    now += Math.max(0, duration.toNanos());
    onSleep.run();
  }

  void advance(Duration d) {
    now += d.toNanos();
  }
}
