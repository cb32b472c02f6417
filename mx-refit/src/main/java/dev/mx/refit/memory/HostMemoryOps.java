package dev.mx.refit.memory;

import dev.mx.api.DType;
import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.refit.cast.Casts;
import dev.mx.refit.reslice.AsStrided;
import dev.mx.refit.reslice.ViewCopy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Memory operations on host memory: arena allocations, {@link MemorySegment#copy}, mx-refit's casts
 * and view copies, and the digest of the best {@link DigestProvider} (resolved at the first
 * digest).
 */
@Internal
public final class HostMemoryOps implements MemoryOps {
  private final Supplier<DigestProvider> digests;
  private volatile DigestProvider digest;

  /** Host operations digesting with the best provider on the class path. */
  public HostMemoryOps() {
    this(() -> DigestProvider.registry().select());
  }

  public HostMemoryOps(Supplier<DigestProvider> digests) {
    this.digests = Objects.requireNonNull(digests, "digests");
  }

  @Override
  public MemoryKind kind() {
    return MemoryKind.HOST;
  }

  @Override
  @SuppressWarnings(
      "MustBeClosedChecker") // the returned registration owns the arena; its close() closes it
  public MemoryRegistration allocate(long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException("host allocation of " + bytes + " bytes");
    }
    Arena arena = Arena.ofShared();
    MemorySegment s;
    try {
      s = arena.allocate(bytes, 4096);
    } catch (RuntimeException | Error e) {
      arena.close(); // e.g. OutOfMemoryError for a huge size: the arena would leak
      throw e;
    }
    AtomicBoolean closed = new AtomicBoolean();
    return new MemoryRegistration() {
      @Override
      public MemorySegment segment() {
        return s;
      }

      @Override
      public void close() {
        if (closed.compareAndSet(false, true)) {
          arena.close();
        }
      }
    };
  }

  @Override
  public void copy(
      MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
    MemorySegment.copy(src, srcOffset, dst, dstOffset, bytes);
  }

  @Override
  public void copyToHost(
      MemorySegment src, long srcOffset, MemorySegment host, long hostOffset, long bytes) {
    MemorySegment.copy(src, srcOffset, host, hostOffset, bytes);
  }

  @Override
  public void copyFromHost(
      MemorySegment host, long hostOffset, MemorySegment dst, long dstOffset, long bytes) {
    MemorySegment.copy(host, hostOffset, dst, dstOffset, bytes);
  }

  @Override
  public boolean supportsCast(DType from, DType to) {
    return Casts.supports(from, to);
  }

  @Override
  public void viewCopy(
      MemorySegment src,
      long srcOffset,
      DType from,
      long[] srcStrides,
      MemorySegment dst,
      long dstOffset,
      DType to,
      long[] dstStrides,
      long[] shape) {
    ViewCopy.compile(
            "host view copy",
            src,
            from,
            new AsStrided(srcOffset, shape, srcStrides),
            dst,
            to,
            new AsStrided(dstOffset, shape, dstStrides))
        .run();
  }

  @Override
  public String digest(MemorySegment bytes) {
    DigestProvider d = digest;
    if (d == null) {
      d = digests.get();
      digest = d;
    }
    return d.digest(bytes);
  }
}
