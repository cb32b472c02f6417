/**
 * The transport SPI: one-sided reads from a peer's registered memory into local registered memory.
 * An integrator implements {@link dev.mx.api.transport.Transport} and {@link
 * dev.mx.api.transport.TransportProvider}; the shared behaviour of the bundled backends (grouping
 * by peer, validation before any byte moves, post-all-then-await-all, counters, idempotent close)
 * is in the backend kit, module {@code mx-transport-kit}, package {@code dev.mx.transport.kit}.
 */
package dev.mx.api.transport;
