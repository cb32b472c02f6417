package dev.mx.api.memory;

import dev.mx.api.error.NoProviderException;
import dev.mx.api.spi.MxProvider;
import dev.mx.api.spi.ProviderRegistry;
import dev.mx.api.transport.MemoryKind;

/**
 * Supplies {@link MemoryOps} for device memory kinds (e.g. {@code mx-cuda} for {@code cuda:N}).
 * Found through {@link java.util.ServiceLoader}; host memory never needs one.
 */
public abstract class MemoryOpsProvider extends MxProvider {

  /** Whether this provider's operations handle memory of {@code kind} (available or not). */
  public abstract boolean serves(MemoryKind kind);

  /**
   * The operations for {@code kind}; called only when {@link #isAvailable()} and {@link #serves}.
   *
   * @throws IllegalArgumentException when the kind names a device this process does not see
   */
  public abstract MemoryOps ops(MemoryKind kind);

  /** The registry of memory-ops providers on the class path. */
  public static ProviderRegistry<MemoryOpsProvider> registry() {
    return ProviderRegistry.load(
        MemoryOpsProvider.class, "memory-ops", "mx.memoryOps", "MX_MEMORY_OPS");
  }

  /**
   * The operations for {@code kind}: {@code host} for host memory, else those of the best available
   * provider serving the kind.
   *
   * @throws NoProviderException naming the kind and every provider serving it with why it is
   *     unavailable (its cause attached), or saying that none on the class path serves it
   */
  public static MemoryOps forKind(MemoryKind kind, MemoryOps host) {
    if (!kind.isDevice()) {
      return host;
    }
    return forKind(kind, registry());
  }

  /**
   * As {@link #forKind(MemoryKind, MemoryOps)} for a device kind, choosing among {@code registry}'s
   * providers.
   */
  public static MemoryOps forKind(MemoryKind kind, ProviderRegistry<MemoryOpsProvider> registry) {
    StringBuilder why = new StringBuilder();
    Throwable firstCause = null;
    for (MemoryOpsProvider p : registry.providers()) {
      boolean serves;
      try {
        serves = p.serves(kind);
      } catch (RuntimeException e) {
        serves = false;
      }
      if (!serves) {
        continue;
      }
      if (p.isAvailable()) {
        return p.ops(kind);
      }
      Throwable cause = p.unavailabilityCause();
      firstCause = firstCause == null ? cause : firstCause;
      why.append(why.isEmpty() ? "" : "; ")
          .append(p.name())
          .append(" (")
          .append(p.artifact())
          .append(") is unavailable: ")
          .append(cause == null ? "no cause given" : cause.toString());
    }
    NoProviderException e =
        new NoProviderException(
            why.isEmpty()
                ? "memory "
                    + kind
                    + " needs device memory operations, and no provider on the class path serves "
                    + kind
                    + " (add dev.mx:mx-cuda for cuda:N)"
                : "memory " + kind + " cannot be used: " + why);
    if (firstCause != null) {
      e.initCause(firstCause);
    }
    throw e;
  }
}
