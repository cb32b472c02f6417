package dev.mx.api.metadata;

import dev.mx.api.Shape;
import java.util.List;
import java.util.Objects;

/**
 * One entry of a shard table: a globally unique source tensor name, its dtype label as published
 * (e.g. {@code torch.bfloat16}), element size, global shape, and the shards this publisher holds.
 */
public record PublishedTensor(
    String name, String dtype, int elsize, Shape fullShape, List<PublishedShard> shards) {

  public PublishedTensor {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(dtype, "dtype of tensor '" + name + "'");
    Objects.requireNonNull(fullShape, "full_shape of tensor '" + name + "'");
    shards = List.copyOf(shards);
  }
}
