package dev.mx.api.plan;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import java.util.List;
import java.util.Objects;

/**
 * A global source tensor as the receiver sees it after discovery: shape, dtype and every shard.
 * {@code partial} is true when the publishers declare that their shards deliberately do not cover
 * the whole tensor; otherwise the shards must tile the global shape exactly (checked by {@code
 * dev.mx.plan.ShardTiling}).
 */
public record SourceInfo(
    Shape globalShape, DType dtype, int elsize, List<Shard> shards, boolean partial) {

  public SourceInfo {
    Objects.requireNonNull(globalShape, "globalShape");
    Objects.requireNonNull(dtype, "dtype");
    shards = List.copyOf(shards);
    if (elsize <= 0) {
      throw new IllegalArgumentException("elsize " + elsize + " must be positive");
    }
  }

  /** A source whose shards must tile it exactly. */
  public SourceInfo(Shape globalShape, DType dtype, int elsize, List<Shard> shards) {
    this(globalShape, dtype, elsize, shards, false);
  }

  public SourceInfo(Shape globalShape, DType dtype, List<Shard> shards) {
    this(globalShape, dtype, dtype.elementSize(), shards, false);
  }

  /** This source with the partial flag set as given. */
  public SourceInfo withPartial(boolean isPartial) {
    return new SourceInfo(globalShape, dtype, elsize, shards, isPartial);
  }
}
