/**
 * The shard-digest SPI: a position-sensitive 128-bit digest of a tensor's bytes (ModelExpress
 * §6.1).
 */
package dev.mx.api.digest;
