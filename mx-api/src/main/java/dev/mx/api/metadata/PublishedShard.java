package dev.mx.api.metadata;

import dev.mx.api.Shape;
import dev.mx.api.digest.TileDigests;
import java.util.Arrays;
import java.util.Objects;

/**
 * One shard as a publisher announces it in its shard table (ModelExpress; ARCHITECTURE §7.1): a
 * contiguous row-major buffer at {@code addr} on device {@code deviceId} of agent {@code
 * agentName}, holding the box at {@code shardOffset}. {@code digest} is null when the publisher
 * computed none; {@code changedStep} (the optional {@code changed_step} key) is the step at which
 * these bytes last changed, null when the publisher does not track it.
 */
public record PublishedShard(
    String agentName,
    int deviceId,
    long addr,
    long[] shardOffset,
    Shape shape,
    String digest,
    TileDigests tiles,
    Long changedStep) {

  /** A shard that does not say when it last changed (the optional {@code changed_step} absent). */
  public PublishedShard(
      String agentName,
      int deviceId,
      long addr,
      long[] shardOffset,
      Shape shape,
      String digest,
      TileDigests tiles) {
    this(agentName, deviceId, addr, shardOffset, shape, digest, tiles, null);
  }

  /** A shard without tile digests (the optional {@code tile_digests} key absent). */
  public PublishedShard(
      String agentName, int deviceId, long addr, long[] shardOffset, Shape shape, String digest) {
    this(agentName, deviceId, addr, shardOffset, shape, digest, null);
  }

  public PublishedShard {
    Objects.requireNonNull(agentName, "agent_name");
    Objects.requireNonNull(shardOffset, "shard_offset");
    Objects.requireNonNull(shape, "shape");
    shardOffset = shardOffset.clone();
  }

  @Override
  public long[] shardOffset() {
    return shardOffset.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof PublishedShard s
        && agentName.equals(s.agentName)
        && deviceId == s.deviceId
        && addr == s.addr
        && Arrays.equals(shardOffset, s.shardOffset)
        && shape.equals(s.shape)
        && Objects.equals(digest, s.digest)
        && Objects.equals(tiles, s.tiles)
        && Objects.equals(changedStep, s.changedStep);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        agentName, deviceId, addr, Arrays.hashCode(shardOffset), shape, digest, tiles, changedStep);
  }

  @Override
  public String toString() {
    return "PublishedShard["
        + agentName
        + " dev "
        + deviceId
        + " @"
        + addr
        + " offset "
        + Arrays.toString(shardOffset)
        + " shape "
        + shape
        + (digest == null ? "" : " digest " + digest)
        + (tiles == null ? "" : " " + tiles.digests().size() + " tiles of " + tiles.tileBytes())
        + (changedStep == null ? "" : " changed at step " + changedStep)
        + "]";
  }
}
