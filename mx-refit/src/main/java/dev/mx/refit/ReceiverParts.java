package dev.mx.refit;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.Transport;
import dev.mx.refit.stage.DeltaState;
import java.util.function.Supplier;

/**
 * What a receiver is made of: its concluded context and its collaborators, which it uses but does
 * not own (transport, discovery, geometry, installer or in-place target, planners, wire policy,
 * digests, records, listener).
 *
 * @param strictPlanner the strict staged planner, or null (then strict verification is refused)
 * @param wirePolicy consulted at every refit
 * @param delta whether sources the publishers claim unchanged are kept rather than read
 * @param sharedDelta what the live weights hold, shared by every receiver writing them in place; or
 *     null
 * @param inPlace the engine's live weights when the receiver writes them in place; null to copy at
 *     install
 */
record ReceiverParts(
    ReceiverContext context,
    Transport transport,
    SourceDiscovery discovery,
    GeometrySource geometry,
    Installer installer,
    PlanBuilder planner,
    PlanBuilder strictPlanner,
    Supplier<WirePolicy> wirePolicy,
    Supplier<DigestProvider> digests,
    boolean rediscoverEachStep,
    boolean delta,
    DeltaState sharedDelta,
    RefitRecords records,
    RefitListener listener,
    MemoryKind memory,
    InPlaceTarget inPlace) {}
