package dev.mx.transport.shm;

import dev.mx.transport.kit.PeerMetadataCodec;
import dev.mx.transport.kit.RegionList;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What a shm endpoint publishes: who and where it runs ({@link ShmHost}), its nonce (also written
 * in its directory file, so a receiver proves it sees the same shared memory rather than trusting
 * names), the directory file, whether it serves registered memory through cross-memory attach, and
 * its regions. Each region is either a shared file (memory the transport allocated) or a range of
 * the process's own memory.
 *
 * <p>Layout, little-endian: {@code "MXSH"}, version, then the fields in declaration order; strings
 * as u16 length + UTF-8.
 */
record ShmPeerMetadata(
    ShmHost host,
    long nonce,
    String directoryPath,
    int directoryCapacity,
    boolean crossMemoryAttach,
    List<Region> regions) {
  static final int MAGIC = 0x48534d58; // "MXSH" read little-endian
  private static final int VERSION = 1;

  /** One published region; {@code path} is null for memory served by cross-memory attach. */
  record Region(long base, long length, int slot, long cookie, String path)
      implements PeerMetadataCodec.PublishedRegion {
    boolean shared() {
      return path != null;
    }
  }

  byte[] encode() {
    List<byte[]> strings = new ArrayList<>();
    int size = 4 + 4 + 8 + 8 + 4 + 8 + 4 + 1 + 4;
    for (String s :
        new String[] {host.bootId(), host.hostname(), host.pidNamespace(), directoryPath}) {
      strings.add(s.getBytes(StandardCharsets.UTF_8));
    }
    for (Region r : regions) {
      size += 8 + 8 + 4 + 8 + 1;
      strings.add(r.path == null ? new byte[0] : r.path.getBytes(StandardCharsets.UTF_8));
    }
    for (byte[] s : strings) {
      size += 2 + s.length;
    }
    ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC).putInt(VERSION);
    for (int i = 0; i < 4; i++) {
      putString(b, strings.get(i));
    }
    b.putLong(host.pid())
        .putLong(host.startTime())
        .putInt(host.uid())
        .putLong(nonce)
        .putInt(directoryCapacity)
        .put((byte) (crossMemoryAttach ? 1 : 0))
        .putInt(regions.size());
    for (int i = 0; i < regions.size(); i++) {
      Region r = regions.get(i);
      RegionList.write(b, r.base, r.length, r.slot, r.cookie);
      b.put((byte) (r.path == null ? 0 : 1));
      putString(b, strings.get(4 + i));
    }
    return b.array();
  }

  private static void putString(ByteBuffer b, byte[] s) {
    b.putShort((short) s.length).put(s);
  }

  private static String getString(ByteBuffer b) {
    byte[] s = new byte[Short.toUnsignedInt(b.getShort())];
    b.get(s);
    return new String(s, StandardCharsets.UTF_8);
  }

  /** Whether {@code blob} starts like shm metadata. */
  static boolean looksLike(byte[] blob) {
    return blob.length >= 8
        && ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN).getInt(0) == MAGIC;
  }

  /** Decodes what {@link #encode} wrote; the regions are indexed in published order. */
  static final PeerMetadataCodec<ShmPeerMetadata> CODEC =
      PeerMetadataCodec.of((session, blob) -> decode(blob), ShmPeerMetadata::regions);

  /**
   * Decodes a blob.
   *
   * @throws IllegalArgumentException when it is not shm metadata of this version, or is malformed
   */
  static ShmPeerMetadata decode(byte[] blob) {
    if (!looksLike(blob)) {
      throw new IllegalArgumentException("not shm transport metadata (" + blob.length + " bytes)");
    }
    ByteBuffer b = ByteBuffer.wrap(blob).order(ByteOrder.LITTLE_ENDIAN);
    b.position(4);
    try {
      int version = b.getInt();
      if (version != VERSION) {
        throw new IllegalArgumentException(
            "shm metadata version " + version + ", this build reads " + VERSION);
      }
      String bootId = getString(b);
      String hostname = getString(b);
      String pidns = getString(b);
      String dir = getString(b);
      long pid = b.getLong();
      long start = b.getLong();
      int uid = b.getInt();
      long nonce = b.getLong();
      int capacity = b.getInt();
      boolean cma = b.get() != 0;
      List<Region> regions =
          RegionList.read(
              b,
              capacity,
              "shm metadata",
              (in, e) -> {
                boolean shared = in.get() != 0;
                String path = getString(in);
                return new Region(e.base(), e.length(), e.slot(), e.cookie(), shared ? path : null);
              });
      RegionList.requireEnd(b, "shm metadata");
      return new ShmPeerMetadata(
          new ShmHost(bootId, hostname, pidns, pid, start, uid),
          nonce,
          dir,
          capacity,
          cma,
          List.copyOf(regions));
    } catch (BufferUnderflowException e) {
      throw new IllegalArgumentException(
          "shm metadata is truncated (" + blob.length + " bytes)", e);
    }
  }
}
