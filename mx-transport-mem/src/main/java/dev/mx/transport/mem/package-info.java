/**
 * The {@code mem} transport: the reference backend. It moves real bytes between native regions of
 * this JVM registered with it, with the same validation as the wire backends, so a plan that
 * reconstructs correctly here reconstructs correctly on the wire. Always available, lowest
 * priority.
 */
package dev.mx.transport.mem;
