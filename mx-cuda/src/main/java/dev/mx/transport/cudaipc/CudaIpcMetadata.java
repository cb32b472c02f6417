package dev.mx.transport.cudaipc;

import dev.mx.api.error.TransportException;
import dev.mx.transport.kit.PeerMetadataCodec;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

/**
 * What a cuda-ipc endpoint publishes (its shard table's agent metadata): the process and endpoint,
 * and per registered region its address range, where it lives, and for device memory the IPC handle
 * of the allocation holding it with the region's offset in that allocation. Little-endian,
 * versioned.
 *
 * @param pid the publishing process
 * @param token the endpoint, for peers in the same process
 * @param device the endpoint's device ordinal
 * @param regions the registered regions
 */
record CudaIpcMetadata(long pid, UUID token, int device, List<Region> regions) {
  static final int MAGIC = 0x4d584349; // "MXCI"
  static final int VERSION = 1;
  static final int HANDLE_BYTES = 64;
  private static final int HEADER_BYTES = 4 + 4 + 8 + 16 + 4 + 4;
  private static final int REGION_BYTES = 8 + 8 + 4 + 4 + 8 + HANDLE_BYTES;

  /**
   * One published region.
   *
   * @param base its address in the publishing process
   * @param length its size in bytes
   * @param deviceOrdinal its device, or -1 for host memory (never exported across processes)
   * @param offsetInAllocation where it starts in its device allocation (0 for host memory)
   * @param handle the allocation's IPC handle (64 zero bytes for host memory)
   */
  record Region(long base, long length, int deviceOrdinal, long offsetInAllocation, byte[] handle)
      implements PeerMetadataCodec.PublishedRegion {
    Region {
      if (handle.length != HANDLE_BYTES) {
        throw new IllegalArgumentException(
            "an IPC handle has " + HANDLE_BYTES + " bytes, got " + handle.length);
      }
    }

    boolean isDevice() {
      return deviceOrdinal >= 0;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Region r
          && r.base == base
          && r.length == length
          && r.deviceOrdinal == deviceOrdinal
          && r.offsetInAllocation == offsetInAllocation
          && Arrays.equals(r.handle, handle);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(base) * 31 + Arrays.hashCode(handle);
    }

    @Override
    public String toString() {
      return "Region[0x"
          + Long.toHexString(base)
          + "+"
          + length
          + (isDevice() ? ", cuda:" + deviceOrdinal : ", host")
          + "]";
    }
  }

  CudaIpcMetadata {
    regions = List.copyOf(regions);
  }

  byte[] encode() {
    ByteBuffer b =
        ByteBuffer.allocate(HEADER_BYTES + regions.size() * REGION_BYTES)
            .order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(MAGIC)
        .putInt(VERSION)
        .putLong(pid)
        .putLong(token.getMostSignificantBits())
        .putLong(token.getLeastSignificantBits())
        .putInt(device)
        .putInt(regions.size());
    for (Region r : regions) {
      b.putLong(r.base)
          .putLong(r.length)
          .putInt(r.isDevice() ? 1 : 0)
          .putInt(r.deviceOrdinal)
          .putLong(r.offsetInAllocation)
          .put(r.handle);
    }
    return b.array();
  }

  /**
   * Decodes a peer's metadata.
   *
   * @throws TransportException naming {@code session} when the bytes are not cuda-ipc metadata of
   *     this version
   */
  static CudaIpcMetadata decode(String session, byte[] bytes) {
    ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    if (bytes.length < HEADER_BYTES || b.getInt() != MAGIC) {
      throw new TransportException(
          session,
          "cuda-ipc transport: metadata for peer '"
              + session
              + "' is not cuda-ipc metadata ("
              + bytes.length
              + " bytes)");
    }
    int version = b.getInt();
    if (version != VERSION) {
      throw new TransportException(
          session,
          "cuda-ipc transport: peer '"
              + session
              + "' speaks metadata version "
              + version
              + ", this endpoint "
              + VERSION);
    }
    try {
      long pid = b.getLong();
      UUID token = new UUID(b.getLong(), b.getLong());
      int device = b.getInt();
      int count = b.getInt();
      if (count < 0 || (long) count * REGION_BYTES != b.remaining()) {
        throw new TransportException(
            session,
            "cuda-ipc transport: metadata for peer '"
                + session
                + "' announces "
                + count
                + " regions but carries "
                + b.remaining()
                + " bytes of them");
      }
      List<Region> regions = new ArrayList<>(count);
      for (int i = 0; i < count; i++) {
        long base = b.getLong();
        long length = b.getLong();
        boolean isDevice = b.getInt() == 1;
        int ordinal = b.getInt();
        long offset = b.getLong();
        byte[] handle = new byte[HANDLE_BYTES];
        b.get(handle);
        regions.add(new Region(base, length, isDevice ? ordinal : -1, offset, handle));
      }
      return new CudaIpcMetadata(pid, token, device, regions);
    } catch (BufferUnderflowException e) {
      throw new TransportException(
          session, "cuda-ipc transport: metadata for peer '" + session + "' is truncated", e);
    }
  }
}
