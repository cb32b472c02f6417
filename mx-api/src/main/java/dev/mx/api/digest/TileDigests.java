package dev.mx.api.digest;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * Digests over a fixed tiling of one shard's bytes: tile {@code k} is bytes {@code [k * tileBytes,
 * min((k + 1) * tileBytes, size))}, digested as a region of its own. They let a receiver that reads
 * a shard only in part verify every tile it holds whole without pulling the rest.
 */
public record TileDigests(long tileBytes, List<String> digests) {

  public TileDigests {
    if (tileBytes <= 0) {
      throw new IllegalArgumentException("tile_bytes " + tileBytes + " must be positive");
    }
    digests = List.copyOf(Objects.requireNonNull(digests, "digests"));
  }

  /** Tiles over {@code size} bytes. */
  public static int count(long size, long tileBytes) {
    return (int) ((size + tileBytes - 1) / tileBytes);
  }

  /** Whether these digests tile exactly {@code size} bytes. */
  public boolean fits(long size) {
    return digests.size() == count(size, tileBytes);
  }

  public long start(int tile) {
    return tile * tileBytes;
  }

  public long end(int tile, long size) {
    return Math.min((tile + 1) * tileBytes, size);
  }

  public String digest(int tile) {
    return digests.get(tile);
  }

  /** Digests every tile of {@code bytes}. */
  public static TileDigests of(DigestProvider provider, MemorySegment bytes, long tileBytes) {
    int n = count(bytes.byteSize(), tileBytes);
    String[] out = new String[n];
    for (int k = 0; k < n; k++) {
      long a = k * tileBytes;
      out[k] = provider.digest(bytes.asSlice(a, Math.min(tileBytes, bytes.byteSize() - a)));
    }
    return new TileDigests(tileBytes, List.of(out));
  }
}
