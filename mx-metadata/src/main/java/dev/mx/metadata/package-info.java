/**
 * Where publishers and receivers meet: the shard-table codec ({@code mx.reshard.shard_table.v1}),
 * metadata stores opened by URI ({@code memory:}, {@code file:}, {@code redis:}), the discovery
 * quorum and the bounded peer handshake (ModelExpress; ARCHITECTURE §7.1, §7.4, §7.5).
 */
package dev.mx.metadata;
