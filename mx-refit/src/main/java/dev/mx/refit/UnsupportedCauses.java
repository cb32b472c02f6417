package dev.mx.refit;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Groups per-source "unsupported" reasons into causes (ModelExpress' {@code summarize_unsupported}): the
 * cause is the text before the first {@code " on lazy "}, so 18 432 per-expert failures of one op collapse
 * into one line.
 */
public final class UnsupportedCauses {
  private static final String SPLIT = " on lazy ";

  /** One cause and how many sources it hit. */
  public record Cause(String cause, int sources) {}

  private UnsupportedCauses() {}

  /** Causes sorted by (count descending, cause), at most {@code limit} of them (all when limit < 0). */
  public static List<Cause> summarize(Map<String, String> reasons, int limit) {
    Map<String, Integer> counts = new LinkedHashMap<>();
    for (String reason : reasons.values()) {
      String r = reason == null ? "" : reason;
      int cut = r.indexOf(SPLIT);
      String cause = (cut >= 0 ? r.substring(0, cut) : r).trim();
      counts.merge(cause, 1, Integer::sum);
    }
    List<Cause> causes = new ArrayList<>();
    counts.forEach((c, n) -> causes.add(new Cause(c, n)));
    causes.sort(Comparator.comparingInt(Cause::sources).reversed().thenComparing(Cause::cause));
    return limit < 0 || causes.size() <= limit ? causes : causes.subList(0, limit);
  }

  /** {@code "3 x cause; 1 x other"}, or {@code "cause not recorded at capture"} when there are none. */
  public static String describe(Map<String, String> reasons, int limit) {
    List<Cause> causes = summarize(reasons, limit);
    if (causes.isEmpty()) {
      return "cause not recorded at capture";
    }
    StringBuilder sb = new StringBuilder();
    for (Cause c : causes) {
      if (!sb.isEmpty()) {
        sb.append("; ");
      }
      sb.append(c.sources()).append(" x ").append(c.cause());
    }
    return sb.toString();
  }
}
