package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.SettingDeclaration;

/**
 * The settings of the metadata and version stores, liveness and the peer handshake, declared once
 * ({@code docs/SETTINGS.md} is generated from them; ModelExpress's names where ModelExpress has the
 * setting, ARCHITECTURE §7.5). Two heartbeats exist and mean different things: {@link
 * #HEARTBEAT_INTERVAL} is how often a publisher refreshes its READY source records (ModelExpress's
 * liveness, judged against {@link #HEARTBEAT_TIMEOUT}); {@link #HEARTBEAT_PERIOD} is how often a
 * party of a versioned refit (trainer rank, follower) beats its progress record, judged against
 * {@link #STALL_LIMIT}.
 */
@Stable
public enum MetadataSetting implements SettingDeclaration {
  HEARTBEAT_INTERVAL(
      "mx.heartbeat.interval",
      "MX_HEARTBEAT_INTERVAL_S",
      "seconds > 0",
      "30",
      "Source liveness (ModelExpress): how often a publisher re-stamps its READY source records in"
          + " the metadata store. Not the progress heartbeat (MX_HEARTBEAT_PERIOD_S)."),
  HEARTBEAT_TIMEOUT(
      "mx.heartbeat.timeout",
      "MX_HEARTBEAT_TIMEOUT_S",
      "seconds > 0",
      "90",
      "Source liveness: a READY source counts as alive while its last stamp is younger than this."),
  GC_TIMEOUT(
      "mx.metadata.gcTimeout",
      "MX_GC_TIMEOUT_S",
      "seconds > 0",
      "3600",
      "A store may forget a source record nobody stamped for this long."),
  HEARTBEAT_PERIOD(
      "mx.heartbeat-period",
      "MX_HEARTBEAT_PERIOD_S",
      "seconds > 0",
      "2",
      "Versioned refits: how often a party (trainer rank, version follower) writes its progress"
          + " heartbeat, so that waiters on it can tell slow from dead. Not the source liveness"
          + " interval (MX_HEARTBEAT_INTERVAL_S)."),
  STALL_LIMIT(
      "mx.stall-limit",
      "MX_STALL_LIMIT_S",
      "seconds > 0",
      "60",
      "Versioned refits: how long a waiter keeps waiting on a party whose progress does not"
          + " advance (thirty progress heartbeats by default)."),
  HANDSHAKE_TIMEOUT(
      "mx.handshake.timeout",
      "MX_RESHARD_HANDSHAKE_TIMEOUT_S",
      "seconds > 0",
      "900",
      "The whole peer handshake's budget (ModelExpress); outstanding peers are then listed."),
  HANDSHAKE_ATTEMPT(
      "mx.handshake.attempt",
      "MX_RESHARD_HANDSHAKE_ATTEMPT_S",
      "seconds > 0",
      "20",
      "One handshake dial at most."),
  HANDSHAKE_BACKOFF(
      "mx.handshake.backoff",
      "MX_RESHARD_HANDSHAKE_BACKOFF_S",
      "seconds > 0",
      "2",
      "The pause after a handshake round in which every outstanding peer failed."),
  STORE_PROVIDER(
      "mx.metadata",
      "MX_METADATA",
      "provider name",
      "(highest priority)",
      "Chooses the metadata-store provider by name instead of the best one on the class path.");

  private final Declared declared;

  MetadataSetting(String property, String env, String type, String defaultValue, String meaning) {
    this.declared = new Declared(property, env, type, defaultValue, meaning);
  }

  @Override
  public Declared declared() {
    return declared;
  }

  /** The default as seconds (for the duration settings). */
  double defaultSeconds() {
    return Double.parseDouble(defaultValue());
  }
}
