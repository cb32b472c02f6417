/**
 * Operations on memory of one {@link dev.mx.api.transport.MemoryKind}: allocation, byte and strided
 * copies with casts, and the shard digest, so that a receiver or publisher whose buffers live on an
 * accelerator uses that accelerator's kernels without depending on its library.
 */
package dev.mx.api.memory;
