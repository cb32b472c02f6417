package dev.mx.refit;

import dev.mx.api.util.Settings;

/**
 * The ModelExpress environment flags the receiver honours (ModelExpress; ARCHITECTURE §7.8), each
 * also settable as a system property. All are read at call time, so a running process can toggle
 * them between refits.
 */
public enum RefitFlag {
  /**
   * Bounding threshold for descriptors per copy (strictly greater pulls the source whole); read at
   * plan time.
   */
  MAX_SEGMENTS_PER_COPY(
      "MX_RESHARD_MAX_SEGMENTS_PER_COPY", "mx.reshard.max-segments-per-copy", "64"),
  /**
   * Default wire policy when {@code mx.receiver.wire} is not set: one batch (true) or three phases.
   */
  FUSED_WIRE("MX_RESHARD_FUSED_WIRE", "mx.reshard.fused-wire", "true"),
  /** Batched (parallel) re-slice copies when destinations are provably disjoint. */
  BATCH_INSTALL("MX_RESHARD_BATCH_INSTALL", "mx.reshard.batch-install", "true"),
  /** Reuse descriptor lists across steps (keyed by the wire policy's fused flag). */
  CACHE_DESCRIPTORS("MX_RESHARD_CACHE_DESCRIPTORS", "mx.reshard.cache-descriptors", "true"),
  /** Enable the coverage gate. */
  REQUIRE_FULL_COVERAGE(
      "MX_RESHARD_REQUIRE_FULL_COVERAGE", "mx.reshard.require-full-coverage", "false"),
  /** Coverage gate floor, a fraction in [0, 1]. */
  COVERAGE_FLOOR("MX_RESHARD_COVERAGE_FLOOR", "mx.reshard.coverage-floor", "0.995"),
  /** Emit the {@code refit-stage-v2} record after every refit. */
  STAGE_RECORD("MX_REFIT_STAGE_RECORD", "mx.refit.stage-record", "true"),
  /**
   * The level of the stage record: {@code debug} (default: a library's log shows one line per refit
   * only when asked) or {@code info} (operators' log pipelines).
   */
  STAGE_RECORD_LEVEL("MX_REFIT_STAGE_RECORD_LEVEL", "mx.refit.stage-record-level", "debug"),
  /**
   * Overlap staged-shard verification and copies with the rest of the wire (fused policy, worker
   * threads).
   */
  PIPELINE("MX_REFIT_PIPELINE", "mx.refit.pipeline", "true"),
  /** Per-rank throughput ceiling in Gbps; 0 (default) turns the check off. */
  MAX_GBPS("MX_RESHARD_MAX_GBPS", "mx.reshard.max-gbps", "0");

  private final String env;
  private final String property;
  private final String defaultValue;

  RefitFlag(String env, String property, String defaultValue) {
    this.env = env;
    this.property = property;
    this.defaultValue = defaultValue;
  }

  public String env() {
    return env;
  }

  public String property() {
    return property;
  }

  /** The default, as the string a user would set. */
  public String defaultValue() {
    return defaultValue;
  }

  /** The value as set (property, then environment), or the default. */
  public String string(Settings settings) {
    String v = settings.get(property, env);
    return v == null || v.isBlank() ? defaultValue : v;
  }

  public boolean bool(Settings settings) {
    return settings.bool(property, env, Boolean.parseBoolean(defaultValue));
  }

  public int integer(Settings settings) {
    return settings.integer(property, env, Integer.parseInt(defaultValue));
  }

  public double number(Settings settings) {
    return settings.number(property, env, Double.parseDouble(defaultValue));
  }

  /** Whether the flag is set at all (property or environment). */
  public boolean isSet(Settings settings) {
    String v = settings.get(property, env);
    return v != null && !v.isBlank();
  }
}
