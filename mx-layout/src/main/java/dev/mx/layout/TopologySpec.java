package dev.mx.layout;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code key=int,...} syntax of topology options such as {@code --trainer tp=4,pp=2} and {@code
 * --inference tp=2}.
 */
public final class TopologySpec {

  private TopologySpec() {}

  /**
   * Parses {@code key=int} pairs separated by commas, e.g. {@code tp=4,pp=1,ep=1}, keys
   * lower-cased, in order.
   *
   * @param what the side ({@code trainer} or {@code inference}), named in errors
   * @throws LayoutException naming the malformed part
   */
  public static Map<String, Integer> parse(String spec, String what) {
    Map<String, Integer> out = new LinkedHashMap<>();
    if (spec == null || spec.isBlank()) {
      throw new LayoutException(what + " topology is empty");
    }
    for (String part : spec.split(",")) {
      String[] kv = part.trim().split("=", 2);
      if (kv.length != 2) {
        throw new LayoutException(
            what + " topology '" + spec + "': '" + part.trim() + "' is not key=value");
      }
      String key = kv[0].trim().toLowerCase(Locale.ROOT);
      int value;
      try {
        value = Integer.parseInt(kv[1].trim());
      } catch (NumberFormatException e) {
        String tooLarge = tooLarge(kv[1]);
        throw new LayoutException(
            what
                + " topology '"
                + spec
                + "': "
                + key
                + (tooLarge != null ? tooLarge : " is not an integer: '" + kv[1].trim() + "'"));
      }
      if (out.put(key, value) != null) {
        throw new LayoutException(what + " topology '" + spec + "': " + key + " is given twice");
      }
    }
    return out;
  }

  /**
   * For a value that {@link Integer#parseInt} refused: {@code " V is above the limit of
   * 2147483647"} when it is a whole number too large for an int, else null (it is no number).
   */
  public static String tooLarge(String value) {
    String v = value.trim();
    return v.matches("\\+?[0-9]+") ? " " + v + " is above the limit of " + Integer.MAX_VALUE : null;
  }
}
