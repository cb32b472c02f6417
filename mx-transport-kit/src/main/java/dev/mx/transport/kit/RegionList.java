package dev.mx.transport.kit;

import dev.mx.api.annotation.Internal;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The region list of a backend's peer metadata, read the one way every backend writes it: a count,
 * then per region its base address, length, directory slot and cookie, followed by what the backend
 * adds (a remote key, a file path). Counts, slots and lengths are checked against the directory's
 * slots; messages name the metadata ({@code what}, e.g. "shm metadata").
 */
@Internal
public final class RegionList {
  private RegionList() {}

  /** The fields every region entry starts with; {@code index} is its place in the list. */
  public record Entry(int index, long base, long length, int slot, long cookie) {}

  /** Reads what a backend adds after an entry's common fields, and makes its region of them. */
  @FunctionalInterface
  public interface Tail<R> {
    R read(ByteBuffer b, Entry entry);
  }

  /**
   * Reads a region list of at most {@code slots} regions from {@code b}.
   *
   * @throws IllegalArgumentException naming {@code what} when the count or a region's slot or
   *     length is out of range
   */
  public static <R> List<R> read(ByteBuffer b, int slots, String what, Tail<R> tail) {
    int n = b.getInt();
    if (n < 0 || n > slots) {
      throw new IllegalArgumentException(what + " lists " + n + " regions for " + slots + " slots");
    }
    List<R> regions = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      Entry e = new Entry(i, b.getLong(), b.getLong(), b.getInt(), b.getLong());
      R region = tail.read(b, e);
      if (e.slot() < 0 || e.slot() >= slots || e.length() <= 0) {
        throw new IllegalArgumentException(
            what + " region #" + i + " has slot " + e.slot() + ", length " + e.length());
      }
      regions.add(region);
    }
    return regions;
  }

  /** Writes an entry's common fields, in the order {@link #read} reads them. */
  public static void write(ByteBuffer b, long base, long length, int slot, long cookie) {
    b.putLong(base).putLong(length).putInt(slot).putLong(cookie);
  }

  /** Refuses bytes after the metadata's last field. */
  public static void requireEnd(ByteBuffer b, String what) {
    if (b.hasRemaining()) {
      throw new IllegalArgumentException(what + " has " + b.remaining() + " trailing bytes");
    }
  }
}
