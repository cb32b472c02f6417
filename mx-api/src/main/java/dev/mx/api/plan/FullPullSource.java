package dev.mx.api.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.List;

/**
 * A source pulled whole into a contiguous staging buffer of its global shape (one segment per
 * shard), whose recorded copies are then replayed locally.
 */
public record FullPullSource(
    String srcName,
    Shape globalShape,
    DType dtype,
    int elsize,
    List<PullSegment> segments,
    List<RecordedCopy> copies) {

  public FullPullSource {
    segments = List.copyOf(segments);
    copies = List.copyOf(copies);
  }
}
