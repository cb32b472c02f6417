/**
 * A small safetensors reader (the file mapped into a {@link java.lang.foreign.MemorySegment}, no
 * heap copy of the weights) and writer, used by {@code mx digest --safetensors} and {@code mx demo
 * --dump}.
 */
package dev.mx.digest.safetensors;
