package dev.mx.refit.memory;

import dev.mx.api.annotation.Internal;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.memory.MemoryOps;
import java.lang.foreign.MemorySegment;

/**
 * The shard digest of a {@link MemoryOps}, as the {@link DigestProvider} the verification stages
 * take.
 */
@Internal
public final class OpsDigest extends DigestProvider {
  private final MemoryOps ops;

  public OpsDigest(MemoryOps ops) {
    this.ops = ops;
  }

  @Override
  public String name() {
    return "memory-ops:" + ops.kind();
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public String digest(MemorySegment bytes) {
    return ops.digest(bytes);
  }

  /** The pieces of a region of the ops' memory, where its kind can digest them in place. */
  @Override
  public java.util.Optional<dev.mx.api.digest.DigestParts> parts(long byteCount) {
    return ops.digestParts(byteCount);
  }
}
