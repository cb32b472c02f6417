/**
 * Which implementation of memory operations a receiver or publisher uses: {@link
 * dev.mx.refit.memory.HostMemoryOps} (the Vector API casts and re-slice, the best CPU digest) for
 * host memory, a {@link dev.mx.api.memory.MemoryOpsProvider}'s for device memory.
 */
package dev.mx.refit.memory;
