/**
 * The metadata-store SPI: a directory where publishers announce their shard tables and heartbeat,
 * and receivers discover READY publishers. The store never carries weight bytes.
 */
package dev.mx.api.metadata;
