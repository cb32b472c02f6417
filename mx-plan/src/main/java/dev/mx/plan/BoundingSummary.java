package dev.mx.plan;

import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingDecision.Option;
import dev.mx.api.plan.TransferPlan;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Human summaries of a shard-bounded plan's decisions: counts per option, the decisions worth
 * reading, and one log-friendly line for a receiver's log.
 */
public final class BoundingSummary {
  private BoundingSummary() {}

  /** How many sources each option won, in option order. */
  public static Map<Option, Integer> tally(TransferPlan plan) {
    Map<Option, Integer> m = new EnumMap<>(Option.class);
    for (Option o : Option.values()) {
      m.put(o, 0);
    }
    for (BoundingDecision d : plan.boundingDecisions()) {
      m.merge(d.chosen(), 1, Integer::sum);
    }
    return m;
  }

  /** E.g. {@code "131 exact, 16 shard_staging, 0 full_pull"}. */
  public static String counts(TransferPlan plan) {
    StringBuilder sb = new StringBuilder();
    tally(plan)
        .forEach(
            (o, n) -> sb.append(sb.isEmpty() ? "" : ", ").append(n).append(' ').append(o.label()));
    return sb.toString();
  }

  /**
   * Up to {@code limit} decisions worth reading: sources read otherwise than exactly, most exact
   * descriptors first, then exact sources for which an alternative was refused (e.g. by the
   * extra-wire bound).
   */
  public static List<BoundingDecision> notable(TransferPlan plan, int limit) {
    List<BoundingDecision> bounded = new ArrayList<>();
    List<BoundingDecision> refused = new ArrayList<>();
    for (BoundingDecision d : plan.boundingDecisions()) {
      if (d.chosen() != Option.EXACT) {
        bounded.add(d);
      } else if (d.cost(Option.EXACT).descriptors() > 1
          && d.options().stream().anyMatch(o -> !o.feasible())) {
        refused.add(d);
      }
    }
    Comparator<BoundingDecision> byExact =
        Comparator.comparingLong((BoundingDecision d) -> d.cost(Option.EXACT).descriptors())
            .reversed();
    bounded.sort(byExact);
    refused.sort(byExact);
    bounded.addAll(refused);
    return bounded.size() <= limit ? bounded : new ArrayList<>(bounded.subList(0, limit));
  }

  /**
   * One line for a log: mode, option counts, descriptors against the exact baseline, extra wire
   * bytes, and the first decision worth reading with its reason.
   */
  public static String logLine(TransferPlan plan) {
    StringBuilder sb = new StringBuilder("bounding ").append(plan.bounding().label()).append(": ");
    sb.append(plan.boundingDecisions().size())
        .append(" sources (")
        .append(counts(plan))
        .append("), ")
        .append(plan.stagedShards().size())
        .append(" staged shards, ")
        .append(plan.descriptorCount())
        .append(" descriptors (exact ")
        .append(plan.exactDescriptorCount())
        .append("), extra wire bytes ")
        .append(plan.extraWireBytes());
    List<BoundingDecision> top = notable(plan, 1);
    if (!top.isEmpty()) {
      BoundingDecision d = top.get(0);
      sb.append("; e.g. ").append(d.source()).append(": ").append(d.reason());
    }
    return sb.toString();
  }
}
