package dev.mx.api.plan;

import dev.mx.api.DType;
import java.util.List;
import java.util.Objects;

/**
 * One publisher shard pulled whole with a single descriptor into its own staging buffer (shard staging,
 * the {@code shard} bounding mode), whose copies are then replayed locally out of the staged bytes.
 *
 * <p>{@code segment} reads all {@link Shard#byteSize()} bytes of {@code shard} into the staging buffer named
 * by {@link PullSegment#paramName()} at byte 0. Each of {@code copies} reads the staged shard as a tensor of
 * shape {@code shard.shape()} (its op chain is relative to the shard, not to the global tensor) and writes the
 * part of a receiver copy that this shard covers. {@code shardIndex} is the shard's index in its source's
 * {@link SourceInfo#shards()}, so a verifier can find the published digest; because the shard lands whole, it
 * can always be verified before any copy reads it.
 */
public record StagedShard(
    String srcName, int shardIndex, Shard shard, DType dtype, PullSegment segment, List<RecordedCopy> copies) {

  public StagedShard {
    Objects.requireNonNull(srcName, "srcName");
    Objects.requireNonNull(shard, "shard of staged source '" + srcName + "'");
    Objects.requireNonNull(dtype, "dtype of staged source '" + srcName + "'");
    Objects.requireNonNull(segment, "segment of staged shard of '" + srcName + "'");
    copies = List.copyOf(copies);
    if (segment.nbytes() != shard.byteSize()) {
      throw new IllegalArgumentException("staged shard " + shardIndex + " of '" + srcName + "' reads "
          + segment.nbytes() + " bytes but the shard holds " + shard.byteSize());
    }
  }
}
