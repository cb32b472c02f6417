package dev.mx.transport.ucx;

import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.RegionList;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/**
 * What a publisher tells receivers (the opaque blob of the endpoint's {@code localMetadata()}): its
 * UCX worker address, where its region directory lives, and per registered region the base address,
 * length, directory slot and cookie (to tell whether the region is still registered) and the packed
 * remote key.
 *
 * <p>Layout, little-endian: {@code int magic "MXUC", short version, bytes workerAddress, long
 * directoryBase, int directorySlots, bytes directoryRkey, int regionCount, regionCount × (long
 * base, long length, int slot, long cookie, bytes rkey)}, where {@code bytes} is an int length
 * followed by that many bytes.
 */
record UcxPeerMetadata(
    byte[] workerAddress,
    long directoryBase,
    int directorySlots,
    byte[] directoryRkey,
    List<Region> regions) {
  private static final int MAGIC = 0x4355584d; // "MXUC" read little-endian
  private static final short VERSION = 1;

  /** No UCX worker address or packed remote key comes near this; anything larger is corrupt. */
  private static final int MAX_BLOB = 1 << 20;

  /** One published region. */
  record Region(long base, long length, int slot, long cookie, byte[] rkey)
      implements PeerMetadataCodec.PublishedRegion {}

  UcxPeerMetadata {
    regions = List.copyOf(regions);
  }

  byte[] encode() {
    int size = 4 + 2 + 4 + workerAddress.length + 8 + 4 + 4 + directoryRkey.length + 4;
    for (Region r : regions) {
      size += 8 + 8 + 4 + 8 + 4 + r.rkey.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).putShort(VERSION);
    putBytes(b, workerAddress);
    b.putLong(directoryBase).putInt(directorySlots);
    putBytes(b, directoryRkey);
    b.putInt(regions.size());
    for (Region r : regions) {
      RegionList.write(b, r.base, r.length, r.slot, r.cookie);
      putBytes(b, r.rkey);
    }
    return b.array();
  }

  /** Decodes what {@link #encode} wrote; the regions are indexed in published order. */
  static final PeerMetadataCodec<UcxPeerMetadata> CODEC =
      PeerMetadataCodec.of((session, blob) -> decode(blob), UcxPeerMetadata::regions);

  /**
   * Parses a blob.
   *
   * @throws IllegalArgumentException saying what is wrong, when the blob is not ucx metadata or is
   *     corrupt
   */
  static UcxPeerMetadata decode(byte[] blob) {
    if (blob == null || blob.length < 6) {
      throw new IllegalArgumentException(
          "not ucx transport metadata (" + (blob == null ? "null" : blob.length + " bytes") + ")");
    }
    ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
    if (b.getInt() != MAGIC) {
      throw new IllegalArgumentException(
          "not ucx transport metadata (bad magic; " + blob.length + " bytes)");
    }
    short version = b.getShort();
    if (version != VERSION) {
      throw new IllegalArgumentException(
          "ucx transport metadata version "
              + version
              + " is not supported (expected "
              + VERSION
              + ")");
    }
    try {
      byte[] address = getBytes(b, "worker address");
      long directoryBase = b.getLong();
      int directorySlots = b.getInt();
      byte[] directoryRkey = getBytes(b, "directory remote key");
      List<Region> regions =
          RegionList.read(
              b,
              directorySlots,
              "ucx metadata",
              (in, e) ->
                  new Region(
                      e.base(),
                      e.length(),
                      e.slot(),
                      e.cookie(),
                      getBytes(in, "remote key of region " + e.index())));
      RegionList.requireEnd(b, "ucx metadata");
      return new UcxPeerMetadata(address, directoryBase, directorySlots, directoryRkey, regions);
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException(
          "truncated ucx transport metadata (" + blob.length + " bytes)", e);
    }
  }

  private static void putBytes(ByteBuffer b, byte[] bytes) {
    b.putInt(bytes.length).put(bytes);
  }

  private static byte[] getBytes(ByteBuffer b, String what) {
    int n = b.getInt();
    if (n < 0 || n > MAX_BLOB || n > b.remaining()) {
      throw new IllegalArgumentException(
          "corrupt ucx metadata: " + what + " claims " + n + " bytes");
    }
    byte[] out = new byte[n];
    b.get(out);
    return out;
  }
}
