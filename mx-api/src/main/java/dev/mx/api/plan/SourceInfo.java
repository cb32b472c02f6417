package dev.mx.api.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.List;
import java.util.Objects;

/** A global source tensor as the receiver sees it after discovery: shape, dtype and every shard. */
public record SourceInfo(Shape globalShape, DType dtype, int elsize, List<Shard> shards) {

  public SourceInfo {
    Objects.requireNonNull(globalShape, "globalShape");
    Objects.requireNonNull(dtype, "dtype");
    shards = List.copyOf(shards);
    if (elsize <= 0) {
      throw new IllegalArgumentException("elsize " + elsize + " must be positive");
    }
  }

  public SourceInfo(Shape globalShape, DType dtype, List<Shard> shards) {
    this(globalShape, dtype, dtype.elementSize(), shards);
  }
}
