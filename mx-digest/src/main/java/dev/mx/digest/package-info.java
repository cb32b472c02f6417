/**
 * The shard digest of ModelExpress (ARCHITECTURE §7.2) (bit-exact, any alignment, streaming and
 * multi-threaded), the {@code shardRegion} helper that recovers a publisher's box from an assembled
 * tensor, and the switch that decides whether publishers announce digests.
 */
package dev.mx.digest;
