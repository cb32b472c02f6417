package dev.mx.api.util;

import dev.mx.api.annotation.Internal;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Configuration read at call time from a system property (wins) or an environment variable, with
 * the parsing rules ModelExpress uses: booleans accept 1/true/yes/on and 0/false/no/off in any
 * case. An invalid value fails with an {@link IllegalArgumentException} naming the setting and the
 * value (it never falls back to the default silently).
 *
 * <p>Durations in seconds are named {@code ..._S} (environment) everywhere. The earlier spelling
 * {@code ..._SECS} (e.g. {@code MX_STALL_LIMIT_SECS}, also ModelExpress's {@code
 * MX_HEARTBEAT_INTERVAL_SECS}) is still read as a deprecated alias of {@code ..._S}, with a warning
 * once per name; the new name wins when both are set.
 */
@Internal
public final class Settings {
  private static final Logger LOG = LoggerFactory.getLogger(Settings.class);
  private static final Settings SYSTEM = new Settings(System::getProperty, System::getenv);

  /** Deprecated names already warned about: once per JVM is enough. */
  private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

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

  /**
   * The property if set, else the environment variable, else its deprecated {@code _SECS} alias
   * (with a warning), else null.
   */
  public String get(String property, String envVar) {
    String v = property(property);
    if (v != null) {
      return v;
    }
    v = env(envVar);
    String old = deprecatedAlias(envVar);
    if (v == null && old != null && env(old) != null) {
      if (WARNED.add(old)) {
        LOG.warn("{} is deprecated: set {} instead (same value, in seconds)", old, envVar);
      }
      return env(old);
    }
    return v;
  }

  /** The old {@code _SECS} spelling of a {@code _S} variable, or null. */
  static String deprecatedAlias(String envVar) {
    return envVar != null && envVar.endsWith("_S")
        ? envVar.substring(0, envVar.length() - 2) + "_SECS"
        : null;
  }

  /** The name the value came from, for messages: {@code -Dproperty} or the variable. */
  public String describe(String property, String envVar) {
    if (property(property) != null) {
      return "-D" + property;
    }
    String old = deprecatedAlias(envVar);
    if (env(envVar) == null && old != null && env(old) != null) {
      return old;
    }
    return envVar;
  }

  private IllegalArgumentException invalid(
      String property, String envVar, String value, String expected) {
    String name = describe(property, envVar);
    String other = name.startsWith("-D") ? envVar : property;
    return new IllegalArgumentException(
        name
            + "='"
            + value
            + "' is invalid: "
            + expected
            + (other == null ? "" : " (the same setting as " + other + ")"));
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
        throw invalid(property, envVar, v, "expected 1/true/yes/on or 0/false/no/off");
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
      throw invalid(property, envVar, v, "expected an integer");
    }
  }

  /** A floating-point setting; an unparseable value fails naming the setting. NaN/inf pass. */
  public double number(String property, String envVar, double defaultValue) {
    String v = get(property, envVar);
    if (v == null || v.isBlank()) {
      return defaultValue;
    }
    try {
      return Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw invalid(property, envVar, v, "expected a number");
    }
  }

  /**
   * A strictly positive, finite number; anything else (0, negative, inf, NaN, garbage) fails naming
   * the setting.
   */
  public double positiveFinite(String property, String envVar, double defaultValue) {
    double d = number(property, envVar, defaultValue);
    if (!(d > 0) || Double.isInfinite(d)) {
      throw invalid(property, envVar, get(property, envVar), "expected a positive finite number");
    }
    return d;
  }

  /** A string setting with a default. */
  public String string(String property, String envVar, String defaultValue) {
    String v = get(property, envVar);
    return v == null || v.isBlank() ? defaultValue : v.trim();
  }
}
