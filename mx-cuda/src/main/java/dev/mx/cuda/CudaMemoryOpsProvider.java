package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.transport.MemoryKind;
import java.util.concurrent.ConcurrentHashMap;

/** Serves {@code cuda:N} memory with {@link CudaMemoryOps}; available where {@link Cuda} is. */
@Stable
public final class CudaMemoryOpsProvider extends MemoryOpsProvider {
  private static final ConcurrentHashMap<Integer, CudaMemoryOps> OPS = new ConcurrentHashMap<>();

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
  public String artifact() {
    return "dev.mx:mx-cuda";
  }

  @Override
  public boolean serves(MemoryKind kind) {
    return kind.isDevice();
  }

  @Override
  public MemoryOps ops(MemoryKind kind) {
    Cuda.ensureAvailability();
    Cuda.checkOrdinal(kind.ordinal());
    return OPS.computeIfAbsent(kind.ordinal(), CudaMemoryOps::new);
  }
}
