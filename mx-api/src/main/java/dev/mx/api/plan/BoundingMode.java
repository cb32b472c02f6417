package dev.mx.api.plan;

import dev.mx.api.util.Settings;
import java.util.Locale;

/**
 * How a planner bounds descriptor-heavy sources.
 *
 * <ul>
 *   <li>{@link #MODELEXPRESS}: ModelExpress (ARCHITECTURE §7.3) exactly — a source any of whose
 *       copies needs more than {@code max_segments_per_copy} segments is pulled whole when its
 *       shards form a gap-free dim-0 partition, else it stays exact ("unbounded"). The output is
 *       the ModelExpress-compatible plan.
 *   <li>{@link #SHARD}: a cost model chooses per source between exact segments, shard staging (each
 *       touched publisher shard pulled whole with one descriptor, copies replayed locally per
 *       shard; any shard layout) and the ModelExpress whole-source full pull, within a bound on
 *       extra wire bytes.
 * </ul>
 *
 * <p>Receivers read it from {@code -Dmx.receiver.bounding} / {@code MX_RESHARD_BOUNDING} ({@link
 * #fromSettings}).
 */
public enum BoundingMode {
  MODELEXPRESS("modelexpress"),
  SHARD("shard");

  /** The receiver's setting (system property) of the bounding mode. */
  public static final String PROPERTY = "mx.receiver.bounding";

  /** The receiver's setting (environment variable) of the bounding mode. */
  public static final String ENV = "MX_RESHARD_BOUNDING";

  private final String label;

  BoundingMode(String label) {
    this.label = label;
  }

  /** The name used in JSON, on the command line and in settings. */
  public String label() {
    return label;
  }

  /**
   * Parses {@code modelexpress} or {@code shard} (any case, surrounding blanks ignored).
   *
   * @throws IllegalArgumentException naming the value and the valid ones
   */
  public static BoundingMode parse(String value) {
    if (value != null) {
      String v = value.trim().toLowerCase(Locale.ROOT);
      for (BoundingMode m : values()) {
        if (m.label.equals(v)) {
          return m;
        }
      }
    }
    throw new IllegalArgumentException(
        "unknown bounding mode '" + value + "'; expected modelexpress or shard");
  }

  /**
   * The mode set by {@code -Dmx.receiver.bounding} or {@code MX_RESHARD_BOUNDING}, else {@code
   * defaultMode}.
   *
   * @throws IllegalArgumentException when the setting holds an unknown mode (a misspelt safety
   *     setting is an error, not a silent default)
   */
  public static BoundingMode fromSettings(Settings settings, BoundingMode defaultMode) {
    String v = settings.get(PROPERTY, ENV);
    if (v == null || v.isBlank()) {
      return defaultMode;
    }
    try {
      return parse(v);
    } catch (IllegalArgumentException e) {
      String from = settings.property(PROPERTY) != null ? "-D" + PROPERTY : ENV;
      throw new IllegalArgumentException(from + ": " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return label;
  }
}
