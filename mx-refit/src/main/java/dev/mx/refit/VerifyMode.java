package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import java.util.Locale;

/**
 * How much of a refit the receiver verifies against publisher digests before installing ({@code
 * mx.receiver.verify}).
 */
@Stable
public enum VerifyMode {
  /**
   * The default: every installed byte is verified before install. Shards read whole are checked by
   * their digest; a shard read only in part is pulled whole into staging (one descriptor), checked
   * by its digest before any copy reads it, and the parts are copied locally out of the verified
   * bytes. A shard without a digest fails the refit at prepare, with a message naming the opt-outs.
   */
  ALL("all"),
  /**
   * ModelExpress (ARCHITECTURE §7.3): every source without a directly recoverable copy is pulled
   * whole, so every published shard of every source read is verified; a shard without a digest
   * fails the refit.
   */
  STRICT("strict"),
  /**
   * Opt-out: verify every published shard whose whole box the receiver holds after the wire (a
   * full-pull staging buffer, or reads that cover the whole shard); shards read only in part, or
   * published without a digest, are counted as unverifiable, and the bytes installed from them are
   * reported as {@code unverified_bytes}.
   */
  WHOLE_SHARDS("whole-shards"),
  /** Opt-out: no verification; every installed byte is reported as {@code unverified_bytes}. */
  OFF("off");

  private final String label;

  VerifyMode(String label) {
    this.label = label;
  }

  /** The configuration spelling, e.g. {@code whole-shards}. */
  public String label() {
    return label;
  }

  /**
   * Parses {@code all}, {@code strict}, {@code whole-shards} (also {@code whole_shards}) or {@code
   * off}, ignoring case.
   *
   * @throws IllegalArgumentException naming the value and the accepted ones
   */
  public static VerifyMode parse(String value) {
    String v = value == null ? "" : value.trim().toLowerCase(Locale.ROOT).replace('_', '-');
    for (VerifyMode m : values()) {
      if (m.label.equals(v)) {
        return m;
      }
    }
    throw new IllegalArgumentException(
        "mx.receiver.verify='" + value + "' is not one of all, strict, whole-shards, off");
  }

  @Override
  public String toString() {
    return label;
  }
}
