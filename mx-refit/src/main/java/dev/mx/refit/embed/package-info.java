/**
 * The embedding path: what every integrator of mx writes, in the library. The geometry helpers (a
 * declarative receiver {@link dev.mx.refit.embed.TargetGeometry}, {@link
 * dev.mx.refit.embed.TpShard} for a tensor-parallel shard and fused QKV / gate-up), store-backed
 * {@link dev.mx.refit.embed.StoreDiscovery} (consistent with the trainer job a receiver expects),
 * and the ranks of a refit job: a {@link dev.mx.refit.embed.TrainerRank} (publisher or versioned
 * publisher over buffer sets), an {@link dev.mx.refit.embed.InferenceRank} (receiver, version
 * following, live weights in place with a staging reservation, cold-start rehearsal) and the {@link
 * dev.mx.refit.embed.StepCoordinator} (commit once every rank verified, otherwise roll back or
 * report torn). See docs/EMBEDDING.md and the mx-examples module.
 */
package dev.mx.refit.embed;
