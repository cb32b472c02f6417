package dev.mx.api.plan;

import dev.mx.api.Box;
import dev.mx.api.Shape;
import dev.mx.api.digest.TileDigests;
import java.util.Arrays;
import java.util.Objects;

/**
 * One publisher's piece of a source tensor: a contiguous row-major buffer at absolute address
 * {@code addr} in session {@code session}, holding the box {@code [shardOffset, shardOffset +
 * shape)} of the global tensor. {@code digest} is the publisher's shard digest, or null when it
 * computed none (absent means "unchecked", never "equal"). {@code changedStep} is the step at which
 * the publisher last changed these bytes (the optional {@code changed_step} key of delta refits),
 * or null when it does not say.
 */
public record Shard(
    long[] shardOffset,
    Shape shape,
    String session,
    long addr,
    int elsize,
    String digest,
    TileDigests tiles,
    Long changedStep) {

  /** A shard whose publisher does not say when it last changed. */
  public Shard(
      long[] shardOffset,
      Shape shape,
      String session,
      long addr,
      int elsize,
      String digest,
      TileDigests tiles) {
    this(shardOffset, shape, session, addr, elsize, digest, tiles, null);
  }

  /** A shard without tile digests. */
  public Shard(
      long[] shardOffset, Shape shape, String session, long addr, int elsize, String digest) {
    this(shardOffset, shape, session, addr, elsize, digest, null);
  }

  public Shard {
    Objects.requireNonNull(shardOffset, "shard_offset");
    Objects.requireNonNull(shape, "shape");
    Objects.requireNonNull(session, "session");
    shardOffset = shardOffset.clone();
    if (shardOffset.length != shape.rank()) {
      throw new IllegalArgumentException(
          "shard of session '"
              + session
              + "': shard_offset "
              + Arrays.toString(shardOffset)
              + " has rank "
              + shardOffset.length
              + " but shape "
              + shape
              + " has rank "
              + shape.rank());
    }
    for (int d = 0; d < shardOffset.length; d++) {
      if (shardOffset[d] < 0) {
        throw new IllegalArgumentException(
            "shard of session '"
                + session
                + "': negative shard_offset "
                + Arrays.toString(shardOffset));
      }
    }
    if (elsize <= 0) {
      throw new IllegalArgumentException(
          "shard of session '" + session + "': elsize " + elsize + " must be positive");
    }
  }

  @Override
  public long[] shardOffset() {
    return shardOffset.clone();
  }

  public long shardOffset(int d) {
    return shardOffset[d];
  }

  /** The global box this shard holds. */
  public Box box() {
    return Box.at(shardOffset, shape);
  }

  /** Bytes in the shard's buffer. */
  public long byteSize() {
    return shape.byteSize(elsize);
  }

  public Shard withDigest(String newDigest) {
    return new Shard(shardOffset, shape, session, addr, elsize, newDigest, tiles, changedStep);
  }

  /** The same shard with fresh whole-shard and tile digests. */
  public Shard withDigests(String newDigest, TileDigests newTiles) {
    return new Shard(shardOffset, shape, session, addr, elsize, newDigest, newTiles, changedStep);
  }

  /** The same shard claiming another last-changed step (null: none). */
  public Shard withChangedStep(Long step) {
    return new Shard(shardOffset, shape, session, addr, elsize, digest, tiles, step);
  }

  /** Tile digests usable for this shard's bytes, or null. */
  public TileDigests usableTiles() {
    return tiles != null && tiles.fits(byteSize()) ? tiles : null;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Shard s
        && Arrays.equals(shardOffset, s.shardOffset)
        && shape.equals(s.shape)
        && session.equals(s.session)
        && addr == s.addr
        && elsize == s.elsize
        && Objects.equals(digest, s.digest)
        && Objects.equals(tiles, s.tiles)
        && Objects.equals(changedStep, s.changedStep);
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        Arrays.hashCode(shardOffset), shape, session, addr, elsize, digest, tiles, changedStep);
  }

  @Override
  public String toString() {
    return "Shard["
        + session
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
