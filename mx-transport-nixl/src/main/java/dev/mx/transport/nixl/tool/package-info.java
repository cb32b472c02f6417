/**
 * A stand-alone nixl publisher process (registers patterned memory and prints NIXL's metadata blob)
 * and the launcher that starts it, for cross-process tests and {@code mx bench nixl}.
 */
package dev.mx.transport.nixl.tool;
