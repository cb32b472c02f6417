package dev.mx.api.error;

import java.util.Arrays;

/**
 * Two trainer ranks publish the same box of a tensor (an owner and its replica) with different
 * digests: their bytes differ, so neither can be trusted as the other's stand-in. Nothing is
 * installed; the message names the tensor, the box and both publishers.
 */
public class ReplicaMismatchException extends MxException {
  private static final long serialVersionUID = 1L;
  private final String source;
  private final long[] shardOffset;
  private final String owner;
  private final String replica;

  public ReplicaMismatchException(
      String source,
      long[] shardOffset,
      String owner,
      String ownerDigest,
      String replica,
      String replicaDigest) {
    super(
        "replica mismatch for source '"
            + source
            + "' at offset "
            + Arrays.toString(shardOffset)
            + ": owner '"
            + owner
            + "' publishes digest "
            + ownerDigest
            + " but replica '"
            + replica
            + "' publishes "
            + replicaDigest
            + " (their bytes differ)");
    this.source = source;
    this.shardOffset = shardOffset.clone();
    this.owner = owner;
    this.replica = replica;
  }

  public String source() {
    return source;
  }

  public long[] shardOffset() {
    return shardOffset.clone();
  }

  /** The publisher that offered the box first (the owner, lowest rank). */
  public String owner() {
    return owner;
  }

  /** The publisher whose copy disagrees with the owner's. */
  public String replica() {
    return replica;
  }
}
