package dev.mx.api.metadata;

import dev.mx.api.annotation.Experimental;
import java.util.Objects;

/**
 * A box of tensor {@code tensor} that a publisher holds as a replica of another publisher's (its
 * owner's: a data- or expert-parallel rank holding the same weights). A shard table lists it apart
 * from its tensors, in a compact form, because its tensor's dtype, element size and global shape
 * are the owner's and the box repeats one the owner lists; receivers may read the box from either.
 *
 * @param tensor the tensor's name, as the owner lists it
 * @param shard the box as this publisher holds it (its own agent, device and address)
 */
@Experimental
public record ReplicaShard(String tensor, PublishedShard shard) {
  public ReplicaShard {
    Objects.requireNonNull(tensor, "tensor");
    Objects.requireNonNull(shard, "shard of replica of '" + tensor + "'");
  }
}
