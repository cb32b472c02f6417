package dev.mx.digest;

import dev.mx.api.digest.DigestParts;
import dev.mx.api.digest.DigestProvider;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * The shard digest on the CPU ({@link ShardDigest}), registered for {@link java.util.ServiceLoader}
 * as {@code cpu}. Always available; a device digest may rank above it.
 */
public final class CpuDigestProvider extends DigestProvider {

  @Override
  public String name() {
    return "cpu";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public String digest(MemorySegment bytes) {
    return ShardDigest.digest(bytes);
  }

  /**
   * Runs every row kernel {@link RowKernels} may pick (the vector one on inputs that stay in cache,
   * the scalar one on larger ones) until the JIT's optimizing tier compiled each of them and their
   * shared caller saw both: warming only one left the other interpreted, and the caller compiled
   * for one alone, on a receiver's first step.
   */
  @Override
  public void warmUp() {
    RowKernels.warmUp();
  }

  /** Pieces combine exactly ({@link PositionedDigest}). */
  @Override
  public Optional<DigestParts> parts(long byteCount) {
    return Optional.of(new PositionedDigest(byteCount));
  }
}
