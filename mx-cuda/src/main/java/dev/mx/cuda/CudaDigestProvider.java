package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.digest.DigestProvider;
import dev.mx.api.transport.MemoryKind;
import dev.mx.digest.ShardDigest;
import java.lang.foreign.MemorySegment;

/**
 * The shard digest wherever the bytes are: device memory (the driver knows the address) is digested
 * on its device by {@link CudaDigest}, host memory by the CPU digest. Registered as {@code cuda},
 * above {@code cpu}, and available only where CUDA is, so a host without a GPU keeps the CPU
 * provider.
 */
@Stable
public final class CudaDigestProvider extends DigestProvider {

  @Override
  public String name() {
    return "cuda";
  }

  @Override
  public boolean isAvailable() {
    return Cuda.isAvailable();
  }

  @Override
  public Throwable unavailabilityCause() {
    return Cuda.unavailabilityCause();
  }

  @Override
  public int priority() {
    return 7;
  }

  @Override
  public String artifact() {
    return "dev.mx:mx-cuda";
  }

  @Override
  public String digest(MemorySegment bytes) {
    if (!bytes.isNative()) {
      return ShardDigest.digest(bytes);
    }
    MemoryKind kind = CudaMemory.kindOf(bytes.address());
    if (kind.isDevice()) {
      return CudaDigest.digest(kind.ordinal(), bytes.address(), bytes.byteSize());
    }
    return ShardDigest.digest(bytes);
  }
}
