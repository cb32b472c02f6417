/**
 * The transport SPI: one-sided reads from a peer's registered memory into local registered memory.
 * {@link dev.mx.api.transport.AbstractTransport} holds the behaviour every backend shares (grouping
 * by peer, validation before any byte moves, post-all-then-await-all, counters, idempotent close).
 */
package dev.mx.api.transport;
