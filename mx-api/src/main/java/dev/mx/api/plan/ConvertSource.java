package dev.mx.api.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.List;

/**
 * A parameter whose source is served in another dtype: it is read into a contiguous staging buffer
 * of {@code destShape} at the wire dtype {@code srcDtype}, then cast into the receive buffer.
 */
public record ConvertSource(
    String paramName, Shape destShape, DType srcDtype, List<PullSegment> segments) {

  public ConvertSource {
    segments = List.copyOf(segments);
  }
}
