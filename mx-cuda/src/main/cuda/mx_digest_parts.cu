// One piece of a region's shard digest, at any byte offset of the region, with or without a copy: the
// device side of dev.mx.cuda.CudaDigestParts. Where a piece is read anyway (landed by DMA and checked
// where it lies, or moved device to device) its bytes are read once: each whole word is loaded, stored to
// dst when there is one, and added to the region's sums at its position (mx_digest_piece.cuh); the few
// edge bytes are added by one thread. out[0..4] as mx_digest.cu's, accumulated (atomics) across pieces.
#include <stdint.h>

#include "mx_device_words.cuh"
#include "mx_digest_piece.cuh"

// Sums the block's four partial sums into out[0..3] (one atomic each per block).
__device__ __forceinline__ void mx_piece_block_add(unsigned long long* part, unsigned long long* out) {
  __shared__ unsigned long long s[4][32];
  int lane = threadIdx.x & 31;
  int warp = threadIdx.x >> 5;
  for (int i = 0; i < 4; i++) {
    unsigned long long v = mx_warp_sum(part[i]);
    if (lane == 0) s[i][warp] = v;
  }
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) >> 5;
    for (int i = 0; i < 4; i++) {
      unsigned long long v = mx_warp_sum(lane < warps ? s[i][lane] : 0);
      if (lane == 0 && v != 0) atomicAdd(out + i, v);
    }
  }
}

// A piece of 'len' bytes at 'src', sitting at byte 'offset' of a region of 'words' words and 'rows'
// whole rows; dst (may be null) receives a copy. Grid-stride over the piece's whole words; blockDim.x a
// multiple of 32; out zeroed once per region.
extern "C" __global__ void mx_digest_piece(const uint8_t* src, uint8_t* dst, unsigned long long len,
                                           unsigned long long offset, unsigned long long words,
                                           unsigned long long rows, unsigned long long* out) {
  unsigned long long first, end;
  mx_piece_words(offset, len, words, &first, &end);
  unsigned long long acc[5] = {0, 0, 0, 0, 0};
  if (end > first) {
    // Word k of the region starts at byte 4k - offset of the piece.
    const uint8_t* base = src + (4 * first - offset);
    uint32_t shift = (uint32_t)(((uintptr_t)base & 3) * 8);
    uint8_t* dbase = dst ? dst + (4 * first - offset) : 0;
    bool dstAligned = dst && ((uintptr_t)dbase & 3) == 0;
    unsigned long long n = end - first;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
      int32_t w = mx_word(base + 4 * i, shift);
      if (dstAligned) {
        ((int32_t*)dbase)[i] = w;
      } else if (dst) {
        uint32_t u = (uint32_t)w;
        for (int b = 0; b < 4; b++) dbase[4 * i + b] = (uint8_t)(u >> (8 * b));
      }
      mx_piece_add_value(first + i, (unsigned long long)(long long)w, rows, acc);
    }
  }
  mx_piece_block_add(acc, out);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long edge[5] = {0, 0, 0, 0, 0};
    mx_piece_edges(src, dst, offset, len, words, rows, edge);
    for (int i = 0; i < 5; i++) {
      if (edge[i] != 0) atomicAdd(out + i, edge[i]);
    }
  }
}
