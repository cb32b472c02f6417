package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.Settings;
import java.time.Duration;

/**
 * The liveness settings of ModelExpress (ARCHITECTURE §7.5), read at call time: publishers
 * heartbeat every {@code MX_HEARTBEAT_INTERVAL_S} (30 s); a READY source counts as alive while its
 * last heartbeat is younger than {@code MX_HEARTBEAT_TIMEOUT_S} (90 s); a store may forget a record
 * nobody heartbeated for {@code MX_GC_TIMEOUT_S} (3600 s).
 */
@Stable
public final class Liveness {
  /** System property for the heartbeat period in seconds (wins over the environment). */
  public static final String INTERVAL_PROPERTY = MetadataSetting.HEARTBEAT_INTERVAL.property();

  public static final String INTERVAL_ENV = MetadataSetting.HEARTBEAT_INTERVAL.env();
  public static final String TIMEOUT_PROPERTY = MetadataSetting.HEARTBEAT_TIMEOUT.property();
  public static final String TIMEOUT_ENV = MetadataSetting.HEARTBEAT_TIMEOUT.env();
  public static final String GC_PROPERTY = MetadataSetting.GC_TIMEOUT.property();
  public static final String GC_ENV = MetadataSetting.GC_TIMEOUT.env();

  public static final double DEFAULT_INTERVAL_SECONDS =
      MetadataSetting.HEARTBEAT_INTERVAL.defaultSeconds();
  public static final double DEFAULT_TIMEOUT_SECONDS =
      MetadataSetting.HEARTBEAT_TIMEOUT.defaultSeconds();
  public static final double DEFAULT_GC_SECONDS = MetadataSetting.GC_TIMEOUT.defaultSeconds();

  private Liveness() {}

  /**
   * The heartbeat period.
   *
   * @throws IllegalArgumentException when it is set to anything but a positive finite number (a
   *     publisher must refuse to start rather than heartbeat in a tight loop, never, or at a period
   *     nobody chose)
   */
  public static Duration heartbeatInterval(Settings settings) {
    return seconds(
        settings.positiveFinite(INTERVAL_PROPERTY, INTERVAL_ENV, DEFAULT_INTERVAL_SECONDS));
  }

  /** How old a READY source's last heartbeat may be; an invalid value fails naming the setting. */
  public static Duration heartbeatTimeout(Settings settings) {
    return seconds(settings.positiveFinite(TIMEOUT_PROPERTY, TIMEOUT_ENV, DEFAULT_TIMEOUT_SECONDS));
  }

  /**
   * How long a store keeps a record without heartbeats; an invalid value fails naming the setting.
   */
  public static Duration gcTimeout(Settings settings) {
    return seconds(settings.positiveFinite(GC_PROPERTY, GC_ENV, DEFAULT_GC_SECONDS));
  }

  /** Whole nanoseconds of a positive number of seconds (at least 1 ns). */
  public static Duration seconds(double seconds) {
    return Duration.ofNanos(Math.max(1, (long) Math.min(Long.MAX_VALUE, seconds * 1e9)));
  }
}
