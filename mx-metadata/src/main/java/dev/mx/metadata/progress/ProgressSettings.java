package dev.mx.metadata.progress;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.Settings;
import dev.mx.metadata.Liveness;
import dev.mx.metadata.MetadataSetting;
import java.time.Duration;

/**
 * The two settings of liveness-based waits, read at call time: how often a party beats ({@code
 * mx.heartbeat-period}, env {@code MX_HEARTBEAT_PERIOD_S}, default 2 s) and how long a waiter keeps
 * waiting on a party whose progress does not advance ({@code mx.stall-limit}, env {@code
 * MX_STALL_LIMIT_S}, default 60 s). The default stall limit is thirty periods: a heartbeat thread
 * of a JVM on a 2-core host at load 40, or in a long GC pause, still beats well within it. An
 * invalid value fails naming the setting.
 */
@Stable
public final class ProgressSettings {
  public static final String HEARTBEAT_PERIOD_PROPERTY =
      MetadataSetting.HEARTBEAT_PERIOD.property();
  public static final String HEARTBEAT_PERIOD_ENV = MetadataSetting.HEARTBEAT_PERIOD.env();
  public static final String STALL_LIMIT_PROPERTY = MetadataSetting.STALL_LIMIT.property();
  public static final String STALL_LIMIT_ENV = MetadataSetting.STALL_LIMIT.env();

  public static final double DEFAULT_HEARTBEAT_PERIOD_SECONDS =
      Double.parseDouble(MetadataSetting.HEARTBEAT_PERIOD.defaultValue());
  public static final double DEFAULT_STALL_LIMIT_SECONDS =
      Double.parseDouble(MetadataSetting.STALL_LIMIT.defaultValue());

  /**
   * The fewest heartbeat periods a stall limit may span. Below it a healthy party, whose record
   * changes once a period (later on a loaded host), is taken for stalled.
   */
  public static final int MIN_STALL_PERIODS = 3;

  private ProgressSettings() {}

  /** How often a party writes its heartbeat record. */
  public static Duration heartbeatPeriod(Settings settings) {
    return Liveness.seconds(
        settings.positiveFinite(
            HEARTBEAT_PERIOD_PROPERTY, HEARTBEAT_PERIOD_ENV, DEFAULT_HEARTBEAT_PERIOD_SECONDS));
  }

  /**
   * How long a party may go without advancing its progress before its waiters fail.
   *
   * @throws IllegalArgumentException when it spans fewer than {@link #MIN_STALL_PERIODS} heartbeat
   *     periods, naming both settings
   */
  public static Duration stallLimit(Settings settings) {
    double seconds =
        settings.positiveFinite(STALL_LIMIT_PROPERTY, STALL_LIMIT_ENV, DEFAULT_STALL_LIMIT_SECONDS);
    requireSpansHeartbeats(STALL_LIMIT_PROPERTY + " / " + STALL_LIMIT_ENV, seconds, settings);
    return Liveness.seconds(seconds);
  }

  /**
   * Refuses a stall limit of {@code seconds} (named {@code name} in the message, e.g. an option)
   * that spans fewer than {@link #MIN_STALL_PERIODS} heartbeat periods of {@code settings}.
   */
  public static void requireSpansHeartbeats(String name, double seconds, Settings settings) {
    double period =
        settings.positiveFinite(
            HEARTBEAT_PERIOD_PROPERTY, HEARTBEAT_PERIOD_ENV, DEFAULT_HEARTBEAT_PERIOD_SECONDS);
    if (seconds < MIN_STALL_PERIODS * period) {
      throw new IllegalArgumentException(
          name
              + " "
              + plain(seconds)
              + " s is below "
              + MIN_STALL_PERIODS
              + " heartbeat periods ("
              + HEARTBEAT_PERIOD_PROPERTY
              + " / "
              + HEARTBEAT_PERIOD_ENV
              + " = "
              + plain(period)
              + " s): a healthy peer would be taken for stalled; give at least "
              + plain(MIN_STALL_PERIODS * period)
              + " s or a shorter heartbeat period");
    }
  }

  /** {@code 2} for 2.0, {@code 0.5} for 0.5: numbers as a user types them. */
  private static String plain(double d) {
    return java.math.BigDecimal.valueOf(d).stripTrailingZeros().toPlainString();
  }
}
