/**
 * Where publishers and receivers meet: the shard-table codec ({@code mx.reshard.shard_table.v1}),
 * metadata stores opened by URI ({@code memory:}, {@code file:}, {@code redis:}), the discovery
 * quorum and the bounded peer handshake (ModelExpress §1.4, §4.6, §8).
 */
package dev.mx.metadata;
