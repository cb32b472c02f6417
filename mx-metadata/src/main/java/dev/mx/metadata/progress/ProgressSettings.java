package dev.mx.metadata.progress;

import dev.mx.api.util.Settings;
import dev.mx.metadata.Liveness;
import java.time.Duration;

/**
 * The two settings of liveness-based waits, read at call time: how often a party beats ({@code
 * mx.heartbeat-period}, env {@code MX_HEARTBEAT_PERIOD_S}, default 2 s) and how long a waiter keeps
 * waiting on a party whose progress does not advance ({@code mx.stall-limit}, env {@code
 * MX_STALL_LIMIT_S}, default 60 s). The default stall limit is thirty periods: a heartbeat thread
 * of a JVM on a 2-core host at load 40, or in a long GC pause, still beats well within it. An
 * invalid value fails naming the setting.
 */
public final class ProgressSettings {
  public static final String HEARTBEAT_PERIOD_PROPERTY = "mx.heartbeat-period";
  public static final String HEARTBEAT_PERIOD_ENV = "MX_HEARTBEAT_PERIOD_S";
  public static final String STALL_LIMIT_PROPERTY = "mx.stall-limit";
  public static final String STALL_LIMIT_ENV = "MX_STALL_LIMIT_S";

  public static final double DEFAULT_HEARTBEAT_PERIOD_SECONDS = 2;
  public static final double DEFAULT_STALL_LIMIT_SECONDS = 60;

  private ProgressSettings() {}

  /** How often a party writes its heartbeat record. */
  public static Duration heartbeatPeriod(Settings settings) {
    return Liveness.seconds(
        settings.positiveFinite(
            HEARTBEAT_PERIOD_PROPERTY, HEARTBEAT_PERIOD_ENV, DEFAULT_HEARTBEAT_PERIOD_SECONDS));
  }

  /** How long a party may go without advancing its progress before its waiters fail. */
  public static Duration stallLimit(Settings settings) {
    return Liveness.seconds(
        settings.positiveFinite(
            STALL_LIMIT_PROPERTY, STALL_LIMIT_ENV, DEFAULT_STALL_LIMIT_SECONDS));
  }
}
