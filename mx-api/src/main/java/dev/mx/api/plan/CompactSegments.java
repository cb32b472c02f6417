package dev.mx.api.plan;

import java.util.List;

/**
 * An immutable list of segments that its planner stores compactly (plans can hold millions). {@link
 * TransferPlan} keeps such a list as it is instead of copying every segment, and asks it for its
 * byte total. Implementations must never change after construction.
 */
public interface CompactSegments extends List<PullSegment> {
  /** Σ {@link PullSegment#nbytes()}. */
  long totalBytes();
}
