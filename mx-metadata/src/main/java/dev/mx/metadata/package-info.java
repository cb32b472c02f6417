/** Shard-table codec and metadata stores (memory, file, Redis) with discovery. */
package dev.mx.metadata;
