package dev.mx.api.util;

import dev.mx.api.annotation.Internal;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Configuration read at call time from a system property (wins) or an environment variable, with
 * the parsing rules ModelExpress uses: booleans accept 1/true/yes/on and 0/false/no/off in any
 * case; an invalid value falls back to the default with a warning naming the setting.
 */
@Internal
public final class Settings {
  private static final Logger LOG = LoggerFactory.getLogger(Settings.class);
  private static final Settings SYSTEM = new Settings(System::getProperty, System::getenv);

  private final Function<String, String> properties;
  private final Function<String, String> env;

  private Settings(Function<String, String> properties, Function<String, String> env) {
    this.properties = properties;
    this.env = env;
  }

  /** The live system properties and process environment. */
  public static Settings system() {
    return SYSTEM;
  }

  /** Fixed maps, for tests and embedding. */
  public static Settings of(Map<String, String> properties, Map<String, String> env) {
    Map<String, String> p = Map.copyOf(properties);
    Map<String, String> e = Map.copyOf(env);
    return new Settings(p::get, e::get);
  }

  /** The raw system property, or null. */
  public String property(String name) {
    return name == null ? null : properties.apply(name);
  }

  /** The raw environment variable, or null. */
  public String env(String name) {
    return name == null ? null : env.apply(name);
  }

  /** The property if set, else the environment variable, else null. */
  public String get(String property, String envVar) {
    String v = property(property);
    return v != null ? v : env(envVar);
  }

  private String describe(String property, String envVar) {
    if (property(property) != null) {
      return "-D" + property;
    }
    return envVar;
  }

  /** A boolean setting. */
  public boolean bool(String property, String envVar, boolean defaultValue) {
    String v = get(property, envVar);
    if (v == null || v.isBlank()) {
      return defaultValue;
    }
    switch (v.trim().toLowerCase(Locale.ROOT)) {
      case "1", "true", "yes", "on":
        return true;
      case "0", "false", "no", "off":
        return false;
      default:
        LOG.warn(
            "ignoring {}='{}': not a boolean (1/true/yes/on or 0/false/no/off); using {}",
            describe(property, envVar),
            v,
            defaultValue);
        return defaultValue;
    }
  }

  /** An integer setting. */
  public int integer(String property, String envVar, int defaultValue) {
    String v = get(property, envVar);
    if (v == null || v.isBlank()) {
      return defaultValue;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      LOG.warn(
          "ignoring {}='{}': not an integer; using {}",
          describe(property, envVar),
          v,
          defaultValue);
      return defaultValue;
    }
  }

  /**
   * A floating-point setting; unparseable values give the default with a warning. NaN/inf pass
   * through.
   */
  public double number(String property, String envVar, double defaultValue) {
    String v = get(property, envVar);
    if (v == null || v.isBlank()) {
      return defaultValue;
    }
    try {
      return Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      LOG.warn(
          "ignoring {}='{}': not a number; using {}", describe(property, envVar), v, defaultValue);
      return defaultValue;
    }
  }

  /**
   * A strictly positive, finite number; anything else (0, negative, inf, NaN, garbage) gives the
   * default.
   */
  public double positiveFinite(String property, String envVar, double defaultValue) {
    double d = number(property, envVar, defaultValue);
    if (!(d > 0) || Double.isInfinite(d)) {
      LOG.warn(
          "ignoring {}={}: must be a positive finite number; using {}",
          describe(property, envVar),
          d,
          defaultValue);
      return defaultValue;
    }
    return d;
  }

  /** A string setting with a default. */
  public String string(String property, String envVar, String defaultValue) {
    String v = get(property, envVar);
    return v == null || v.isBlank() ? defaultValue : v.trim();
  }
}
