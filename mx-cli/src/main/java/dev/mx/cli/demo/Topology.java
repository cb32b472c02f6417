package dev.mx.cli.demo;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** Parses topology options such as {@code tp=4,pp=1,ep=1} or {@code fsdp=3}. */
final class Topology {
  private Topology() {}

  /** Parses {@code key=value,...} with the allowed keys; missing keys default to 1. */
  static Map<String, Integer> parse(String option, String text, String... allowed) {
    Map<String, Integer> out = new LinkedHashMap<>();
    for (String k : allowed) {
      out.put(k, 1);
    }
    if (text == null || text.isBlank()) {
      return out;
    }
    java.util.Set<String> seen = new java.util.HashSet<>();
    for (String part : text.split(",", -1)) {
      String[] kv = part.trim().split("=", 2);
      String key = kv[0].trim().toLowerCase(Locale.ROOT);
      if (kv.length != 2 || !out.containsKey(key)) {
        throw new IllegalArgumentException(
            option
                + " '"
                + text
                + "': expected "
                + String.join("=N,", allowed)
                + "=N, got '"
                + part.trim()
                + "'");
      }
      if (!seen.add(key)) {
        throw new IllegalArgumentException(option + " '" + text + "': " + key + " is given twice");
      }
      int v;
      try {
        v = Integer.parseInt(kv[1].trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            option
                + " '"
                + text
                + "': "
                + key
                + java.util.Objects.requireNonNullElse(
                    dev.mx.layout.TopologySpec.tooLarge(kv[1]), " must be a whole number"));
      }
      if (v < 1) {
        throw new IllegalArgumentException(
            option + " '" + text + "': " + key + " must be at least 1");
      }
      out.put(key, v);
    }
    return out;
  }

  /** The sizes {@code --trainer} accepts. */
  private static final String[] TRAINER_KEYS = {
    "tp", "pp", "ep", "dp", "fsdp", "etp", "pp-first", "pp-last"
  };

  /** Sizes that have no default of 1: left out of the map unless given. */
  private static final java.util.List<String> STATED_ONLY =
      java.util.List.of("etp", "pp-first", "pp-last");

  /**
   * Parses {@code --trainer}: tp, pp, ep, dp and fsdp default to 1; {@code etp} (the experts'
   * tensor-parallel size, tp unless given), {@code pp-first} and {@code pp-last} (an uneven
   * pipeline split) are present only when given.
   */
  static Map<String, Integer> trainer(String option, String text) {
    Map<String, Integer> out = parse(option, text, TRAINER_KEYS);
    if (text == null) {
      out.keySet().removeAll(STATED_ONLY);
      return out;
    }
    java.util.Set<String> given = new java.util.HashSet<>();
    for (String part : text.split(",", -1)) {
      given.add(part.split("=", 2)[0].trim().toLowerCase(Locale.ROOT));
    }
    for (String k : STATED_ONLY) {
      if (!given.contains(k)) {
        out.remove(k);
      }
    }
    return out;
  }

  /** Whether a parsed {@code --trainer} names sizes besides fsdp. */
  static boolean mixesFsdp(Map<String, Integer> t) {
    return t.get("tp") > 1
        || t.get("pp") > 1
        || t.get("ep") > 1
        || t.get("dp") > 1
        || STATED_ONLY.stream().anyMatch(t::containsKey);
  }
}
