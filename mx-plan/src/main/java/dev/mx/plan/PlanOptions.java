package dev.mx.plan;

import dev.mx.api.plan.BoundingMode;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportCosts;
import dev.mx.api.util.Settings;
import java.util.Objects;

/**
 * How {@link ReshardPlanner#plan(dev.mx.api.plan.CaptureResult, java.util.Map, PlanOptions)} plans.
 *
 * @param bounding ModelExpress's threshold bounding, or the cost-model shard bounding
 * @param maxSegmentsPerCopy the ModelExpress threshold (used in {@link BoundingMode#MODELEXPRESS}
 *     only; the cost model replaces it in {@link BoundingMode#SHARD})
 * @param costs what descriptors, wire bytes and local re-slice bytes cost (shard mode)
 * @param maxExtraWireRatio shard mode: an option that reads more than {@code (1 + ratio) ×} a
 *     source's exact bytes is not taken ({@code mx.plan.max-extra-wire-ratio}, {@code
 *     MX_PLAN_MAX_EXTRA_WIRE_RATIO}; default 7, so at most 8 times the exact bytes: enough for an
 *     inference rank that needs 1/8 of each trainer shard, as a TP=1 → TP=8 reshard does;
 *     ModelExpress's full pull has no such bound)
 * @param maxDescriptors a plan needing more descriptors than this is refused before any is built
 *     ({@code mx.plan.max-descriptors}, {@code MX_PLAN_MAX_DESCRIPTORS}; default 2^26)
 */
public record PlanOptions(
    BoundingMode bounding,
    int maxSegmentsPerCopy,
    TransportCosts costs,
    double maxExtraWireRatio,
    long maxDescriptors) {
  public static final String MAX_EXTRA_WIRE_RATIO_PROPERTY =
      PlanSetting.MAX_EXTRA_WIRE_RATIO.property();
  public static final String MAX_EXTRA_WIRE_RATIO_ENV = PlanSetting.MAX_EXTRA_WIRE_RATIO.env();
  public static final double DEFAULT_MAX_EXTRA_WIRE_RATIO =
      Double.parseDouble(PlanSetting.MAX_EXTRA_WIRE_RATIO.defaultValue());
  public static final String MAX_DESCRIPTORS_PROPERTY = PlanSetting.MAX_DESCRIPTORS.property();
  public static final String MAX_DESCRIPTORS_ENV = PlanSetting.MAX_DESCRIPTORS.env();
  public static final long DEFAULT_MAX_DESCRIPTORS =
      Long.parseLong(PlanSetting.MAX_DESCRIPTORS.defaultValue());

  public PlanOptions {
    Objects.requireNonNull(bounding, "bounding");
    Objects.requireNonNull(costs, "costs");
    if (maxSegmentsPerCopy < 1) {
      throw new IllegalArgumentException(
          "max_segments_per_copy " + maxSegmentsPerCopy + " must be at least 1");
    }
    if (!(maxExtraWireRatio >= 0)) {
      throw new IllegalArgumentException(
          "max extra wire ratio " + maxExtraWireRatio + " must be 0 or more");
    }
    if (maxDescriptors < 1) {
      throw new IllegalArgumentException(
          "max descriptors " + maxDescriptors + " must be at least 1");
    }
  }

  /**
   * Options from settings: the threshold of {@link ReshardPlanner#maxSegmentsPerCopy()}, the
   * default {@link TransportCosts} with {@code mx.plan.cost.*} applied, the extra-wire ratio and
   * the descriptor limit.
   */
  public static PlanOptions fromSettings(BoundingMode bounding, Settings settings) {
    return fromSettings(bounding, settings, TransportCosts.DEFAULT);
  }

  /** As {@link #fromSettings(BoundingMode, Settings)} with the costs {@code transport} declares. */
  public static PlanOptions forTransport(
      BoundingMode bounding, Settings settings, Transport transport) {
    return fromSettings(bounding, settings, transport.costs());
  }

  private static PlanOptions fromSettings(
      BoundingMode bounding, Settings settings, TransportCosts declared) {
    int max = new ReshardPlanner(settings).maxSegmentsPerCopy();
    double ratio =
        settings.number(
            MAX_EXTRA_WIRE_RATIO_PROPERTY, MAX_EXTRA_WIRE_RATIO_ENV, DEFAULT_MAX_EXTRA_WIRE_RATIO);
    if (!(ratio >= 0) || Double.isNaN(ratio)) {
      throw new IllegalArgumentException(
          MAX_EXTRA_WIRE_RATIO_PROPERTY
              + " / "
              + MAX_EXTRA_WIRE_RATIO_ENV
              + " = "
              + ratio
              + ": must be 0 or more");
    }
    String limit = settings.get(MAX_DESCRIPTORS_PROPERTY, MAX_DESCRIPTORS_ENV);
    long maxDesc = DEFAULT_MAX_DESCRIPTORS;
    if (limit != null && !limit.isBlank()) {
      try {
        maxDesc = Long.parseLong(limit.trim());
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            MAX_DESCRIPTORS_PROPERTY
                + " / "
                + MAX_DESCRIPTORS_ENV
                + " = '"
                + limit
                + "': not an integer",
            e);
      }
    }
    return new PlanOptions(bounding, max, declared.withOverrides(settings), ratio, maxDesc);
  }

  public PlanOptions withBounding(BoundingMode mode) {
    return new PlanOptions(mode, maxSegmentsPerCopy, costs, maxExtraWireRatio, maxDescriptors);
  }

  public PlanOptions withMaxSegmentsPerCopy(int max) {
    return new PlanOptions(bounding, max, costs, maxExtraWireRatio, maxDescriptors);
  }

  public PlanOptions withCosts(TransportCosts c) {
    return new PlanOptions(bounding, maxSegmentsPerCopy, c, maxExtraWireRatio, maxDescriptors);
  }

  public PlanOptions withMaxExtraWireRatio(double ratio) {
    return new PlanOptions(bounding, maxSegmentsPerCopy, costs, ratio, maxDescriptors);
  }

  public PlanOptions withMaxDescriptors(long max) {
    return new PlanOptions(bounding, maxSegmentsPerCopy, costs, maxExtraWireRatio, max);
  }
}
