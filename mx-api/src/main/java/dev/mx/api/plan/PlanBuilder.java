package dev.mx.api.plan;

import java.util.Map;

/**
 * Turns recorded copies and published sources into the list of byte reads (ModelExpress;
 * ARCHITECTURE §7.3).
 */
public interface PlanBuilder {

  /**
   * Plans a transfer. Sources that cannot be planned go to the plan's fallback list with a reason;
   * they never make this method throw.
   *
   * @param maxSegmentsPerCopy a source any of whose copies needs more segments than this is pulled
   *     whole
   * @throws IllegalArgumentException when {@code maxSegmentsPerCopy < 1} or a shard is malformed
   */
  TransferPlan plan(CaptureResult capture, Map<String, SourceInfo> sources, int maxSegmentsPerCopy);
}
