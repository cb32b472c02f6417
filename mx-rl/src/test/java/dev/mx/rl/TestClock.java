package dev.mx.rl;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A test double of the wall clock: it stands still until a test moves it, so TTL tests never sleep.
 */
final class TestClock implements RefitClock {
  /** The vectors' frozen clock (SPEC README): 2026-01-01T00:00:00Z. */
  static final long GOLDEN_NOW = 1767225600000L;

  private final AtomicLong now;

  TestClock(long start) {
    this.now = new AtomicLong(start);
  }

  @Override
  public long nowMillis() {
    return now.get();
  }

  void advance(long millis) {
    now.addAndGet(millis);
  }
}
