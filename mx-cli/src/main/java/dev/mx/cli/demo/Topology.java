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
  static final java.util.List<String> STATED_ONLY = java.util.List.of("etp", "pp-first", "pp-last");

  /**
   * Parses {@code --trainer}: tp, pp, ep, dp and fsdp default to 1; {@code etp} (the experts'
   * tensor-parallel size, tp unless given), {@code pp-first} and {@code pp-last} (an uneven
   * pipeline split) are present only when given.
   *
   * @throws IllegalArgumentException as {@link #parse} does, and when fsdp is combined with any
   *     Megatron size
   */
  static Map<String, Integer> trainer(String option, String text) {
    Map<String, Integer> out = parse(option, text, TRAINER_KEYS);
    java.util.Set<String> given = new java.util.HashSet<>();
    for (String part : text == null ? new String[0] : text.split(",", -1)) {
      given.add(part.split("=", 2)[0].trim().toLowerCase(Locale.ROOT));
    }
    out.keySet().removeIf(k -> STATED_ONLY.contains(k) && !given.contains(k));
    boolean megatron =
        out.get("tp") > 1
            || out.get("pp") > 1
            || out.get("ep") > 1
            || out.get("dp") > 1
            || STATED_ONLY.stream().anyMatch(out::containsKey);
    if (out.get("fsdp") > 1 && megatron) {
      throw new IllegalArgumentException(
          option
              + " '"
              + text
              + "': fsdp=N cannot be combined with tp, pp, ep, dp, etp, pp-first or pp-last");
    }
    return out;
  }
}
