package dev.mx.api.plan;

import dev.mx.api.DType;
import java.util.List;
import java.util.Objects;

/**
 * One publisher shard pulled whole with a single descriptor into its own staging buffer (shard
 * staging, the {@code shard} bounding mode), whose copies are then replayed locally out of the
 * staged bytes.
 *
 * <p>{@code segment} reads all {@link Shard#byteSize()} bytes of {@code shard} into the staging
 * buffer named by {@link PullSegment#paramName()} at byte 0. Each of {@code copies} reads the
 * staged shard as a tensor of shape {@code shard.shape()} (its op chain is relative to the shard,
 * not to the global tensor) and writes the part of a receiver copy that this shard covers. {@code
 * shardIndex} is the shard's index in its source's {@link SourceInfo#shards()}, so a verifier can
 * find the published digest; because the shard lands whole, it can always be verified before any
 * copy reads it.
 *
 * <p>Staging buffers are named {@link #stagingName(String, int)
 * __stage__/&lt;srcName&gt;/&lt;shardIndex&gt;} (the segment's {@code paramName}); a receiver
 * allocates one buffer of {@code shard.byteSize()} bytes per staged shard under that name. A shard
 * published more than once (replicas with one box) is staged once, from its first listed replica.
 * Copies of one staged shard never write the same destination element twice, and together the
 * staged shards of a source write exactly what its exact segments would have written. A copy whose
 * {@link RecordedCopy#destDtype()} differs from {@code dtype} (the wire dtype of the staged bytes)
 * is cast while it is replayed, as the copies of a strict staged full pull are: shard bounding
 * reads a dtype-changing source this way instead of through convert staging when that is cheaper.
 */
public record StagedShard(
    String srcName,
    int shardIndex,
    Shard shard,
    DType dtype,
    PullSegment segment,
    List<RecordedCopy> copies) {
  /** The prefix of every staging buffer name. */
  public static final String STAGING_PREFIX = "__stage__/";

  /**
   * The staging buffer name of shard {@code shardIndex} of {@code srcName}: {@code
   * __stage__/<src>/<index>}.
   */
  public static String stagingName(String srcName, int shardIndex) {
    return STAGING_PREFIX + srcName + "/" + shardIndex;
  }

  public StagedShard {
    Objects.requireNonNull(srcName, "srcName");
    Objects.requireNonNull(shard, "shard of staged source '" + srcName + "'");
    Objects.requireNonNull(dtype, "dtype of staged source '" + srcName + "'");
    Objects.requireNonNull(segment, "segment of staged shard of '" + srcName + "'");
    copies = List.copyOf(copies);
    if (segment.nbytes() != shard.byteSize()) {
      throw new IllegalArgumentException(
          "staged shard "
              + shardIndex
              + " of '"
              + srcName
              + "' reads "
              + segment.nbytes()
              + " bytes but the shard holds "
              + shard.byteSize());
    }
  }
}
