/**
 * Weights in GPU memory: the {@link dev.mx.cuda.Cuda} availability holder, device allocations
 * carrying their {@link dev.mx.api.transport.MemoryKind}, and the shard digest, dtype casts and
 * strided re-slice copy as CUDA kernels (PTX built from {@code src/main/cuda}, loaded through
 * JCuda's driver API); {@link dev.mx.cuda.CudaMemoryOps} offers them to receivers and publishers
 * whose memory is {@code cuda:N}.
 */
package dev.mx.cuda;
