package dev.mx.api.digest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * Digests over a fixed tiling of one shard's bytes, each tile digested as a region of its own. They
 * let a receiver that reads a shard only in part verify every tile it holds whole without pulling
 * the rest. Two tilings:
 *
 * <ul>
 *   <li><b>byte tiles</b> ({@code columnBytes == 0}): tile {@code k} is bytes {@code [k *
 *       tileBytes, min((k + 1) * tileBytes, size))}; they fit a receiver that reads runs of whole
 *       rows.
 *   <li><b>column tiles</b>: the shard is rows of {@code rowBytes}, each cut into column blocks of
 *       {@code columnBytes}; tile {@code k} is column block {@code k % blocks} of a group of {@code
 *       max(1, tileBytes / columnBytes)} consecutive rows (the last group may be shorter), its
 *       region the block's bytes of each row in row order. They fit a receiver that splits each row
 *       (a row-parallel weight read at a finer tensor parallelism than it was published), which
 *       would hold every byte tile only in part.
 * </ul>
 */
public record TileDigests(long tileBytes, long rowBytes, long columnBytes, List<String> digests) {

  /** One stretch of shard bytes that lies in one tile. */
  @FunctionalInterface
  public interface PartConsumer {
    /**
     * Shard bytes {@code [shardByte, shardByte + nbytes)} are bytes {@code [regionByte, regionByte
     * + nbytes)} of tile {@code tile}'s region.
     */
    void accept(int tile, long regionByte, long shardByte, long nbytes);
  }

  public TileDigests {
    if (tileBytes <= 0) {
      throw new IllegalArgumentException("tile_bytes " + tileBytes + " must be positive");
    }
    if (columnBytes < 0
        || rowBytes < 0
        || (columnBytes == 0) != (rowBytes == 0)
        || (columnBytes > 0 && rowBytes % columnBytes != 0)) {
      throw new IllegalArgumentException(
          "column tiles need row_bytes a positive multiple of a positive column_bytes, got row_bytes "
              + rowBytes
              + ", column_bytes "
              + columnBytes);
    }
    digests = List.copyOf(Objects.requireNonNull(digests, "digests"));
  }

  /** Byte tiles of {@code tileBytes}. */
  public TileDigests(long tileBytes, List<String> digests) {
    this(tileBytes, 0, 0, digests);
  }

  /** Byte tiles over {@code size} bytes. */
  public static int count(long size, long tileBytes) {
    return (int) ((size + tileBytes - 1) / tileBytes);
  }

  /** Whether these are column tiles. */
  public boolean byColumns() {
    return columnBytes > 0;
  }

  /** The same tiling with other digests. */
  public TileDigests withDigests(List<String> other) {
    return new TileDigests(tileBytes, rowBytes, columnBytes, other);
  }

  /** Tiles of this tiling over {@code size} bytes; -1 when column tiles do not fit its rows. */
  public int countFor(long size) {
    if (!byColumns()) {
      return count(size, tileBytes);
    }
    if (size % rowBytes != 0) {
      return -1;
    }
    long groups = (size / rowBytes + rowsPerTile() - 1) / rowsPerTile();
    return Math.toIntExact(groups * blocks());
  }

  /** Whether these digests tile exactly {@code size} bytes. */
  public boolean fits(long size) {
    return digests.size() == countFor(size);
  }

  /** Bytes of tile {@code tile}'s region in a shard of {@code size} bytes. */
  public long regionBytes(int tile, long size) {
    if (!byColumns()) {
      return Math.min((tile + 1) * tileBytes, size) - tile * tileBytes;
    }
    return (endRow(tile, size) - firstRow(tile)) * columnBytes;
  }

  /**
   * The byte range of a byte tile.
   *
   * @throws IllegalStateException for column tiles, whose regions are not one range
   */
  public long start(int tile) {
    requireByteTiles();
    return tile * tileBytes;
  }

  /** As {@link #start}: the end of a byte tile in a shard of {@code size} bytes. */
  public long end(int tile, long size) {
    requireByteTiles();
    return Math.min((tile + 1) * tileBytes, size);
  }

  public String digest(int tile) {
    return digests.get(tile);
  }

  /** Where tile {@code tile} lies, for messages: its shard bytes, or its rows and row bytes. */
  public String describe(int tile, long size) {
    if (!byColumns()) {
      return "tile " + tile + " (shard bytes [" + start(tile) + ", " + end(tile, size) + "))";
    }
    long c = (tile % blocks()) * columnBytes;
    return "tile "
        + tile
        + " (rows ["
        + firstRow(tile)
        + ", "
        + endRow(tile, size)
        + ") of "
        + rowBytes
        + " bytes, row bytes ["
        + c
        + ", "
        + (c + columnBytes)
        + "))";
  }

  /**
   * Cuts shard bytes {@code [from, to)} into the stretches that lie in one tile each, in shard
   * order.
   */
  public void forEachPart(long from, long to, PartConsumer out) {
    if (!byColumns()) {
      for (long at = from; at < to; ) {
        int k = (int) (at / tileBytes);
        long end = Math.min(to, (k + 1) * tileBytes);
        out.accept(k, at - k * tileBytes, at, end - at);
        at = end;
      }
      return;
    }
    long rpt = rowsPerTile();
    long blocks = blocks();
    for (long at = from; at < to; ) {
      long row = at / rowBytes;
      long col = at - row * rowBytes;
      long block = col / columnBytes;
      long end = Math.min(to, row * rowBytes + (block + 1) * columnBytes);
      long group = row / rpt;
      int tile = Math.toIntExact(group * blocks + block);
      out.accept(
          tile, (row - group * rpt) * columnBytes + (col - block * columnBytes), at, end - at);
      at = end;
    }
  }

  /** Digests every byte tile of {@code bytes}. */
  public static TileDigests of(DigestProvider provider, MemorySegment bytes, long tileBytes) {
    int n = count(bytes.byteSize(), tileBytes);
    String[] out = new String[n];
    for (int k = 0; k < n; k++) {
      long a = k * tileBytes;
      out[k] = provider.digest(bytes.asSlice(a, Math.min(tileBytes, bytes.byteSize() - a)));
    }
    return new TileDigests(tileBytes, List.of(out));
  }

  /**
   * Digests every column tile of {@code bytes} (rows of {@code rowBytes}), each gathered into one
   * cache-sized buffer before it is digested.
   */
  public static TileDigests ofColumns(
      DigestProvider provider,
      MemorySegment bytes,
      long tileBytes,
      long rowBytes,
      long columnBytes) {
    TileDigests shape = new TileDigests(tileBytes, rowBytes, columnBytes, List.of());
    int n = shape.countFor(bytes.byteSize());
    if (n < 0) {
      throw new IllegalArgumentException(
          bytes.byteSize() + " bytes are not whole rows of " + rowBytes + " bytes");
    }
    String[] out = new String[n];
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment gather = arena.allocate(Math.max(1, shape.rowsPerTile() * columnBytes), 64);
      for (int k = 0; k < n; k++) {
        long first = shape.firstRow(k);
        long region = shape.regionBytes(k, bytes.byteSize());
        long col = (k % shape.blocks()) * columnBytes;
        for (long r = 0; r * columnBytes < region; r++) {
          MemorySegment.copy(
              bytes, (first + r) * rowBytes + col, gather, r * columnBytes, columnBytes);
        }
        out[k] = provider.digest(gather.asSlice(0, region));
      }
    }
    return shape.withDigests(List.of(out));
  }

  private long blocks() {
    return rowBytes / columnBytes;
  }

  private long rowsPerTile() {
    return Math.max(1, tileBytes / columnBytes);
  }

  private long firstRow(int tile) {
    return (tile / blocks()) * rowsPerTile();
  }

  /** The row after tile {@code tile}'s last in a shard of {@code size} bytes. */
  private long endRow(int tile, long size) {
    return Math.min(firstRow(tile) + rowsPerTile(), size / rowBytes);
  }

  private void requireByteTiles() {
    if (byColumns()) {
      throw new IllegalStateException("column tiles are not one byte range each");
    }
  }
}
