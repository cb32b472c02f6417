package dev.mx.rl;

import dev.mx.rl.memory.MemoryRefitBackend;
import dev.mx.rl.redis.RedisRefitBackend;

/** Opens a backend from its spec: {@code memory:} or {@code redis://[:password@]host:port[/db]}. */
public final class RefitBackends {
  private RefitBackends() {}

  /**
   * Opens the backend {@code spec} names; {@code clock} times its expiries ({@code memory:}; Redis
   * uses its own {@code TIME} so that replicas agree).
   *
   * @throws IllegalArgumentException naming the spec when it is neither form
   */
  public static RefitBackend open(String spec, RefitClock clock) {
    if (spec.equals("memory:")) {
      return new MemoryRefitBackend(clock);
    }
    if (spec.startsWith("redis://")) {
      return new RedisRefitBackend(spec, null);
    }
    throw new IllegalArgumentException(
        "unknown RefitService backend '" + spec + "': expected memory: or redis://host:port");
  }
}
