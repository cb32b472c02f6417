package dev.mx.rl;

/**
 * Wall-clock milliseconds for expiries and creation times, replaceable so that tests move time
 * instead of sleeping.
 */
@FunctionalInterface
public interface RefitClock {
  long nowMillis();

  /** {@link System#currentTimeMillis()}. */
  static RefitClock system() {
    return System::currentTimeMillis;
  }
}
