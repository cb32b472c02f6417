package dev.mx.refit;

import dev.mx.api.util.Settings;
import dev.mx.refit.cast.Fp8Rounding;
import dev.mx.refit.stage.StagingWaves;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;

/**
 * Reads and parses {@link ReceiverSetting}s: a property map first, then the settings' system
 * property and environment variable. Every invalid value fails naming the setting and the value.
 */
final class SettingValues {
  private SettingValues() {}

  /** Where a setting's value comes from: a property map first, then the settings. */
  record Lookup(Map<String, String> properties, Settings settings) {
    /** The raw value, or null when unset (blank counts as unset). */
    String raw(ReceiverSetting s) {
      String v = properties.get(s.property());
      if (v == null) {
        v = settings.get(s.property(), s.env());
      }
      return v == null || v.isBlank() ? null : v.trim();
    }

    /** Whether the property map holds the value (else the settings parse it, naming it). */
    boolean inMap(ReceiverSetting s) {
      String v = properties.get(s.property());
      return v != null && !v.isBlank();
    }
  }

  static Lookup lookup(Map<String, String> properties, Settings settings) {
    return new Lookup(properties, settings);
  }

  static boolean isSet(ReceiverSetting s, Lookup in) {
    return in.raw(s) != null;
  }

  static boolean bool(ReceiverSetting s, Lookup in) {
    if (in.inMap(s)) {
      return parseBool(s.property(), in.raw(s));
    }
    return in.settings().bool(s.property(), s.env(), parseBool(s.property(), s.defaultValue()));
  }

  static int integer(ReceiverSetting s, Lookup in) {
    if (in.inMap(s)) {
      try {
        return Integer.parseInt(in.raw(s));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            s.property() + "='" + in.raw(s) + "' is not an integer", e);
      }
    }
    return in.settings().integer(s.property(), s.env(), Integer.parseInt(s.defaultValue()));
  }

  static double number(ReceiverSetting s, Lookup in) {
    if (in.inMap(s)) {
      try {
        return Double.parseDouble(in.raw(s));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            s.property() + "='" + in.raw(s) + "' is not a number", e);
      }
    }
    return in.settings().number(s.property(), s.env(), Double.parseDouble(s.defaultValue()));
  }

  static String string(ReceiverSetting s, Lookup in) {
    String v = in.raw(s);
    return v == null ? s.defaultValue() : v;
  }

  /** The fp8 rounding mode, {@code vllm} when unset. */
  static Fp8Rounding fp8Rounding(Lookup in) {
    String v = string(ReceiverSetting.FP8_ROUNDING, in);
    try {
      return Fp8Rounding.parse(v);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          ReceiverSetting.FP8_ROUNDING.names() + "='" + v + "': " + e.getMessage(), e);
    }
  }

  /** Whether landed bytes are digested on the wire thread ({@code wire}) or a worker. */
  static boolean landingDigestOnWire(Lookup in) {
    String v = string(ReceiverSetting.LANDING_DIGEST, in).trim();
    if (v.equalsIgnoreCase("wire")) {
      return true;
    }
    if (v.equalsIgnoreCase("worker")) {
      return false;
    }
    throw new IllegalArgumentException(
        ReceiverSetting.LANDING_DIGEST.names() + "='" + v + "': expected worker or wire");
  }

  /** The staging budget, empty when unset or {@code auto}. */
  static OptionalLong stagingBytes(Lookup in) {
    String v = in.raw(ReceiverSetting.STAGING_BYTES);
    if (v == null || v.equalsIgnoreCase("auto")) {
      return OptionalLong.empty();
    }
    return OptionalLong.of(bytes(ReceiverSetting.STAGING_BYTES, v, 1, "e.g. 67108864, 64m, 1g"));
  }

  /** The landing batch, empty when unset. */
  static OptionalLong landingBytes(Lookup in) {
    String v = in.raw(ReceiverSetting.LANDING_BYTES);
    if (v == null) {
      return OptionalLong.empty();
    }
    return OptionalLong.of(
        bytes(ReceiverSetting.LANDING_BYTES, v, 0, "e.g. 8m, or 0 for one batch per peer"));
  }

  /**
   * A byte count ({@link StagingWaves#parseBytes}).
   *
   * @param min the smallest value allowed: 1 (must be positive) or 0 (must not be negative)
   */
  static long bytes(ReceiverSetting s, String v, long min, String examples) {
    long bytes;
    try {
      bytes = StagingWaves.parseBytes(v.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(
          s.property() + "='" + v + "' is not a byte count (" + examples + ")", e);
    }
    if (bytes < min) {
      throw new IllegalArgumentException(
          s.property() + "='" + v + "' " + (min > 0 ? "must be positive" : "must not be negative"));
    }
    return bytes;
  }

  static boolean parseBool(String key, String v) {
    return switch (v.trim().toLowerCase(Locale.ROOT)) {
      case "1", "true", "yes", "on" -> true;
      case "0", "false", "no", "off" -> false;
      default ->
          throw new IllegalArgumentException(key + "='" + v + "' is not a boolean (true/false)");
    };
  }
}
