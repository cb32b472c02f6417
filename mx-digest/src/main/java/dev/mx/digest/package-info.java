/** The shard digest of ModelExpress §6.1 and helpers to digest published shards. */
package dev.mx.digest;
