/**
 * The shard-digest SPI: a position-sensitive 128-bit digest of a tensor's bytes (ModelExpress;
 * ARCHITECTURE §7.2).
 */
package dev.mx.api.digest;
