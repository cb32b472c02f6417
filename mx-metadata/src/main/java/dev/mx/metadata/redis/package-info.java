/**
 * The {@code redis:} metadata store: publishers and receivers on many hosts meet in an existing
 * Redis, with server-clock heartbeats and key TTLs for liveness.
 */
package dev.mx.metadata.redis;
