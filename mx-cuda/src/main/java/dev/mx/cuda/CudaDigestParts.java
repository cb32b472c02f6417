package dev.mx.cuda;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestParts;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The shard digest of a region of device memory assembled from pieces where they landed, in any
 * order: each piece is one {@code mx_digest_piece} launch that reads its bytes once (and with
 * {@link #copyAndAdd} writes them to their destination in the same pass) and adds them to the
 * region's five sums on the device at their position. The receiver then needs neither a gather of a
 * scattered shard into scratch memory nor a second pass over it; only the five sums come to the
 * host, for {@link ShardDigest#hashScalars}. Bit-identical with the CPU digest of the whole region
 * ({@code HostDigestPieceTest} checks the arithmetic on the host, {@code CudaDigestPartsTest} on a
 * GPU).
 *
 * <p>The sums live in one of the device's scratch buffers, taken at the first piece (asking for an
 * instance costs nothing on the device) and given back once the digest was read, by {@link #close},
 * or, for a region a failed step left unfinished, when the instance is collected.
 */
@Internal
public final class CudaDigestParts implements DigestParts, AutoCloseable {
  private static final int THREADS = 256;

  private final CudaDevice device;
  private final long size;
  private final long words;
  private final long rows;
  private final AtomicLong added = new AtomicLong();
  private final Sums sums;
  private final Cleaner.Cleanable cleanable;
  private long[] scalars;

  private static final Cleaner CLEANER = Cleaner.create();

  /** The device buffer of the sums; reachable from the cleaner without the instance. */
  private static final class Sums implements Runnable {
    private final CudaDevice device;
    private long address;
    private boolean closed;

    Sums(CudaDevice device) {
      this.device = device;
    }

    /** The buffer, taken and zeroed at the first call. */
    synchronized long address() {
      if (closed) {
        throw new IllegalStateException("digest region closed");
      }
      if (address == 0) {
        long a = device.borrowScratch();
        try {
          CudaMemory.fill(device, a, 5 * Long.BYTES, (byte) 0);
        } catch (RuntimeException e) {
          device.returnScratch(a);
          throw e;
        }
        address = a;
      }
      return address;
    }

    @Override
    public synchronized void run() {
      closed = true;
      if (address != 0) {
        device.returnScratch(address);
        address = 0;
      }
    }
  }

  /** A region of {@code size} bytes whose pieces are memory of device {@code ordinal}. */
  public CudaDigestParts(int ordinal, long size) {
    if (size < 0) {
      throw new IllegalArgumentException("digest region of " + size + " bytes");
    }
    this.device = CudaDevice.get(ordinal);
    this.size = size;
    this.words = size / Integer.BYTES;
    this.rows = size / ShardDigest.ROW_BYTES;
    this.sums = new Sums(device);
    this.cleanable = CLEANER.register(this, sums);
  }

  @Override
  public boolean add(long offset, MemorySegment bytes) {
    return piece(offset, bytes, 0);
  }

  /** One pass over {@code src}: the copy into {@code dst} (device memory too) and the digest. */
  @Override
  public boolean copyAndAdd(long offset, MemorySegment src, MemorySegment dst) {
    DigestParts.requireSameSize(offset, src, dst);
    return piece(offset, src, dst.address());
  }

  private boolean piece(long offset, MemorySegment bytes, long dst) {
    long len = bytes.byteSize();
    if (offset < 0 || offset + len > size) {
      throw new IllegalArgumentException(
          "piece ["
              + offset
              + ", "
              + (offset + len)
              + ") reaches outside a digest region of "
              + size
              + " bytes");
    }
    if (len > 0) {
      long blocksNeeded = (len / Integer.BYTES + THREADS - 1) / THREADS;
      int blocks =
          (int)
              Math.min(
                  Math.max(1, blocksNeeded), device.fullGrid(CudaKernels.DIGEST_PIECE, THREADS));
      long at = sums.address();
      synchronized (this) {
        device.launch(
            CudaKernels.DIGEST_PIECE,
            blocks,
            THREADS,
            bytes.address(),
            dst,
            len,
            offset,
            words,
            rows,
            at);
      }
    }
    // Waits for this piece (and every launch before it on mx's stream) before counting it.
    device.synchronize();
    long now = added.addAndGet(len);
    if (now > size) {
      throw new IllegalArgumentException(
          "more bytes than the digest region's " + size + " were added (" + now + ")");
    }
    return len > 0 && now == size;
  }

  @Override
  public synchronized String digest() {
    if (scalars == null) {
      if (added.get() < size) {
        throw new IllegalStateException(
            "digest region of " + size + " bytes: only " + added.get() + " added");
      }
      try (Arena arena = Arena.ofConfined()) {
        scalars = CudaDigest.assemble(size, CudaDigest.accumulators(device, sums.address(), arena));
      }
      close();
    }
    return ShardDigest.hashScalars(scalars);
  }

  /** Gives the device sums back; idempotent. */
  @Override
  public void close() {
    cleanable.clean();
  }
}
