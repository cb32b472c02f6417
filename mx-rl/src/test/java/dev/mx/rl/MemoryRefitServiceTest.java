package dev.mx.rl;

import dev.mx.rl.memory.MemoryRefitBackend;

/** SPEC.md's scenarios over the {@code memory:} backend; "replicas" share its one instance. */
class MemoryRefitServiceTest extends AbstractRefitServiceTest {
  @Override
  RefitBackend newBackend(RefitClock clock) {
    return new MemoryRefitBackend(clock);
  }

  @Override
  RefitBackend replicaOf(RefitBackend first, RefitClock clock) {
    return first;
  }
}
