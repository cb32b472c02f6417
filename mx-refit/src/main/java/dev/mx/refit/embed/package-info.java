/**
 * The embedding path: a store-backed {@link dev.mx.refit.embed.StoreDiscovery}, a declarative
 * receiver {@link dev.mx.refit.embed.TargetGeometry} and {@link dev.mx.refit.embed.TpShard} for the
 * common geometries (a tensor-parallel shard, fused QKV / gate-up), so that publishing a sharded
 * tensor set with {@link dev.mx.refit.publish.Publisher} and receiving it resharded with {@link
 * dev.mx.refit.Receiver} takes a screenful of code. See docs/EMBEDDING.md and the mx-examples
 * module.
 */
package dev.mx.refit.embed;
