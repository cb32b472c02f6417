/**
 * Weights in GPU memory: the {@link dev.mx.cuda.Cuda} availability holder, device allocations carrying their
 * {@link dev.mx.api.transport.MemoryKind}, and the shard digest, dtype casts and strided re-slice copy as
 * CUDA kernels (PTX built from {@code src/main/cuda}, loaded through JCuda's driver API).
 */
package dev.mx.cuda;
