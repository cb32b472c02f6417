package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * The shard digest of device memory, bit-identical with {@link ShardDigest#digest(MemorySegment)}:
 * the kernels of {@code mx_digest.cu} reduce the bytes to the reference's scalars on the device,
 * the scalars (at most 40 bytes) come to the host, and {@link ShardDigest#hashScalars} finishes
 * exactly as the CPU digest does.
 */
@Stable
public final class CudaDigest {
  private static final int THREADS = 256;
  private static final int ROW_BYTES = ShardDigest.ROW_BYTES;

  private CudaDigest() {}

  /**
   * The digest of {@code length} bytes at device address {@code address} on device {@code ordinal}
   * (any alignment, any length including zero).
   */
  public static String digest(int ordinal, long address, long length) {
    return ShardDigest.hashScalars(scalars(ordinal, address, length));
  }

  /**
   * The digest of a device segment (one whose memory kind is {@code cuda:N}, as from {@link
   * DeviceAllocation}).
   */
  public static String digest(int ordinal, MemorySegment deviceBytes) {
    return digest(ordinal, deviceBytes.address(), deviceBytes.byteSize());
  }

  /**
   * Checks a shard held in device memory against the digest its publisher announced.
   *
   * @throws DigestMismatchException naming the source, shard offset and publisher when they differ
   */
  public static void verify(
      String source,
      long[] shardOffset,
      String publisher,
      String expected,
      int ordinal,
      MemorySegment deviceBytes) {
    String actual = digest(ordinal, deviceBytes);
    if (!actual.equals(expected)) {
      throw new DigestMismatchException(source, shardOffset, publisher, expected, actual);
    }
  }

  /** The scalars the digest hashes, in the reference's order (as {@link ShardDigest#scalars}). */
  public static long[] scalars(int ordinal, long address, long length) {
    if (length < 0) {
      throw new IllegalArgumentException("digest length " + length);
    }
    if (length == 0) {
      return new long[] {0};
    }
    CudaDevice device = CudaDevice.get(ordinal);
    long rows = length / ROW_BYTES;
    long tailBytes = length - rows * ROW_BYTES;
    int tailWords = (int) (tailBytes / Integer.BYTES);
    int ragged = (int) (tailBytes % Integer.BYTES);
    // out[0..1] row scalars, out[2..4] tail words and ragged bytes.
    long r = device.borrowScratch();
    try (Arena arena = Arena.ofConfined()) {
      device.makeCurrent();
      CudaMemory.fill(device, r, 5 * Long.BYTES, (byte) 0);
      if (rows > 0) {
        // One warp per row, at most one resident wave (the kernel strides over the remaining rows).
        long blocksNeeded = (rows * 32 + THREADS - 1) / THREADS;
        int blocks =
            (int)
                Math.min(
                    Math.max(1, blocksNeeded), device.fullGrid(CudaKernels.DIGEST_ROWS, THREADS));
        device.launch(CudaKernels.DIGEST_ROWS, blocks, THREADS, address, rows, r);
      }
      if (tailBytes > 0) {
        device.launch(
            CudaKernels.DIGEST_TAIL,
            1,
            THREADS,
            address + rows * ROW_BYTES,
            tailWords,
            ragged,
            r + 2 * Long.BYTES);
      }
      device.synchronize();
      return assemble(length, accumulators(device, r, arena));
    } finally {
      device.returnScratch(r);
    }
  }

  /** The five accumulators at device address {@code r}, as the kernels left them. */
  static long[] accumulators(CudaDevice device, long r, Arena arena) {
    MemorySegment host = arena.allocate(5 * Long.BYTES, 8);
    CudaMemory.copyDeviceToHost(device, r, host);
    return host.toArray(ValueLayout.JAVA_LONG);
  }

  /**
   * The scalars the digest of {@code length} bytes hashes, in the reference's order, from the
   * kernels' five accumulators (row sum and weighted row sum, tail sum and weighted tail sum,
   * ragged bytes): each is present only where the reference has it (rows, tail words, ragged
   * bytes).
   */
  static long[] assemble(long length, long[] acc) {
    long words = length / Integer.BYTES;
    long rows = words / (ROW_BYTES / Integer.BYTES);
    long tailWords = words - rows * (ROW_BYTES / Integer.BYTES);
    int ragged = (int) (length % Integer.BYTES);
    long[] out = new long[7];
    int count = 0;
    out[count++] = length;
    if (rows > 0) {
      out[count++] = acc[0];
      out[count++] = acc[1];
    }
    if (tailWords > 0) {
      out[count++] = acc[2];
      out[count++] = acc[3];
    }
    if (ragged > 0) {
      out[count++] = acc[4];
      out[count++] = ragged;
    }
    return Arrays.copyOf(out, count);
  }
}
