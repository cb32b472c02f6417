package dev.mx.refit;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.transport.MemoryKind;
import dev.mx.refit.stage.DeltaState;
import java.util.List;
import java.util.function.Supplier;

/**
 * The builder's options beyond the collaborators, bound for {@link ReceiverAssembly} (its defaults
 * are those of a receiver built through Guice without a builder).
 *
 * @param strictPlanner the strict staged planner, or null for the planner's own when it is a
 *     ReshardPlanner
 * @param sharedDelta what the live weights hold, shared by receivers of one in-place target; or
 *     null
 * @param memoryOps memory operations for {@code memory}, or null for the provider's
 * @param listeners the builder's listeners, told before those bound in a {@code Multibinder}
 */
record ReceiverExtras(
    PlanBuilder strictPlanner,
    Supplier<DigestProvider> digests,
    boolean rediscoverEachStep,
    boolean delta,
    DeltaState sharedDelta,
    MemoryKind memory,
    MemoryOps memoryOps,
    List<RefitListener> listeners) {

  static final ReceiverExtras DEFAULT =
      new ReceiverExtras(
          null,
          () -> DigestProvider.registry().select(),
          false,
          true,
          null,
          MemoryKind.HOST,
          null,
          List.of());
}
