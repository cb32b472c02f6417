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
}
