package dev.mx.refit.publish;

import dev.mx.api.Shape;
import dev.mx.api.annotation.Experimental;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.digest.TileDigests;
import java.lang.foreign.MemorySegment;

/**
 * Which tile digests a publisher lists for a shard. A shard split along its last dimension (a
 * row-parallel weight: {@code o_proj}, {@code down_proj}) gets column tiles of {@code columnBlocks}
 * blocks per row, because a receiver at a finer tensor parallelism reads a fraction of every row of
 * it and would hold every byte tile only in part (and pull the shard whole to verify it). Any other
 * shard gets byte tiles, which fit a receiver reading runs of whole rows. A shard of at most one
 * tile gets none: its tile would be the shard itself.
 *
 * @param tileBytes bytes per tile; 0 lists no tile digests
 * @param columnBlocks column blocks per row of a column-split shard (fewer where the columns do not
 *     divide: the greatest common divisor); 1 lists byte tiles for every shard
 */
@Experimental
public record TileLayout(long tileBytes, int columnBlocks) {

  /**
   * The publisher's defaults ({@link PublisherSetting#TILE_BYTES}, {@link
   * PublisherSetting#COLUMN_BLOCKS}).
   */
  public static final TileLayout DEFAULT =
      new TileLayout(
          Long.parseLong(PublisherSetting.TILE_BYTES.defaultValue()),
          Integer.parseInt(PublisherSetting.COLUMN_BLOCKS.defaultValue()));

  public TileLayout {
    if (tileBytes < 0) {
      throw new IllegalArgumentException(
          PublisherSetting.TILE_BYTES.property()
              + " must be 0 (no tile digests) or a positive number of bytes, got "
              + tileBytes);
    }
    if (columnBlocks < 1) {
      throw new IllegalArgumentException(
          PublisherSetting.COLUMN_BLOCKS.property()
              + " must be at least 1 (1: byte tiles only), got "
              + columnBlocks);
    }
  }

  /**
   * The tile digests of one shard's {@code bytes} (the box {@code shape} of a tensor of {@code
   * globalShape}, row-major), or null when it gets none.
   */
  public TileDigests digest(
      DigestProvider digests,
      MemorySegment bytes,
      Shape shape,
      Shape globalShape,
      int elementSize) {
    if (tileBytes == 0 || bytes.byteSize() <= tileBytes) {
      return null;
    }
    int last = shape.rank() - 1;
    long columns = last < 1 ? 0 : shape.dim(last);
    int blocks = columns == 0 ? 1 : (int) gcd(columnBlocks, columns);
    if (blocks == 1 || columns == globalShape.dim(last)) {
      return TileDigests.of(digests, bytes, tileBytes);
    }
    long rowBytes = columns * elementSize;
    return TileDigests.ofColumns(digests, bytes, tileBytes, rowBytes, rowBytes / blocks);
  }

  private static long gcd(long a, long b) {
    return b == 0 ? a : gcd(b, a % b);
  }
}
