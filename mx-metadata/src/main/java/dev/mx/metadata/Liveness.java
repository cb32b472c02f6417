package dev.mx.metadata;

import dev.mx.api.util.Settings;
import java.time.Duration;

/**
 * The liveness settings of ModelExpress §8.1–8.2, read at call time: publishers heartbeat every
 * {@code MX_HEARTBEAT_INTERVAL_SECS} (30 s); a READY source counts as alive while its last
 * heartbeat is younger than {@code MX_HEARTBEAT_TIMEOUT_SECS} (90 s); a store may forget a record
 * nobody heartbeated for {@code MX_GC_TIMEOUT_SECS} (3600 s).
 */
public final class Liveness {
  /** System property for the heartbeat period in seconds (wins over the environment). */
  public static final String INTERVAL_PROPERTY = "mx.heartbeat.interval";

  public static final String INTERVAL_ENV = "MX_HEARTBEAT_INTERVAL_SECS";
  public static final String TIMEOUT_PROPERTY = "mx.heartbeat.timeout";
  public static final String TIMEOUT_ENV = "MX_HEARTBEAT_TIMEOUT_SECS";
  public static final String GC_PROPERTY = "mx.metadata.gcTimeout";
  public static final String GC_ENV = "MX_GC_TIMEOUT_SECS";

  public static final double DEFAULT_INTERVAL_SECONDS = 30;
  public static final double DEFAULT_TIMEOUT_SECONDS = 90;
  public static final double DEFAULT_GC_SECONDS = 3600;

  private Liveness() {}

  /**
   * The heartbeat period.
   *
   * @throws IllegalArgumentException when it is set to anything but a positive finite number (a
   *     publisher must refuse to start rather than heartbeat in a tight loop, never, or at a period
   *     nobody chose)
   */
  public static Duration heartbeatInterval(Settings settings) {
    String raw = settings.get(INTERVAL_PROPERTY, INTERVAL_ENV);
    double s = DEFAULT_INTERVAL_SECONDS;
    if (raw != null && !raw.isBlank()) {
      try {
        s = Double.parseDouble(raw.trim());
      } catch (NumberFormatException e) {
        s = Double.NaN;
      }
    }
    if (!(s > 0) || Double.isInfinite(s)) {
      throw new IllegalArgumentException(
          "heartbeat interval '"
              + raw
              + "' ("
              + INTERVAL_ENV
              + " or -D"
              + INTERVAL_PROPERTY
              + ") must be a positive finite number of seconds");
    }
    return seconds(s);
  }

  /**
   * How old a READY source's last heartbeat may be; invalid values give the default with a warning.
   */
  public static Duration heartbeatTimeout(Settings settings) {
    return seconds(settings.positiveFinite(TIMEOUT_PROPERTY, TIMEOUT_ENV, DEFAULT_TIMEOUT_SECONDS));
  }

  /**
   * How long a store keeps a record without heartbeats; invalid values give the default with a
   * warning.
   */
  public static Duration gcTimeout(Settings settings) {
    return seconds(settings.positiveFinite(GC_PROPERTY, GC_ENV, DEFAULT_GC_SECONDS));
  }

  /** Whole nanoseconds of a positive number of seconds (at least 1 ns). */
  public static Duration seconds(double seconds) {
    return Duration.ofNanos(Math.max(1, (long) Math.min(Long.MAX_VALUE, seconds * 1e9)));
  }
}
