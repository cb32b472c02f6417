// The shard digest's reduction on the device (dev.mx.digest.ShardDigest, seed 002): the bytes as
// little-endian int32 words in rows of 1024; the int64 row sums reduced to their sum and their sum weighted
// by the 1-based row index (both mod 2^64); the tail words after the last whole row likewise; the ragged
// trailing bytes summed unsigned. Only these few scalars go to the host, which hashes them with BLAKE2b.
// Any byte alignment: a misaligned word is assembled from the two aligned words around it.
#include <stdint.h>

#include "mx_device_words.cuh"

#define MX_ROW_WORDS 1024
#define MX_ROW_BYTES 4096

// Adds the block's two partial scalars into out[0] (sum) and out[1] (weighted), mod 2^64.
__device__ __forceinline__ void mx_block_add(unsigned long long sum, unsigned long long weighted,
                                             unsigned long long* out) {
  __shared__ unsigned long long s_sum[32];
  __shared__ unsigned long long s_weighted[32];
  int lane = threadIdx.x & 31;
  int warp = threadIdx.x >> 5;
  sum = mx_warp_sum(sum);
  weighted = mx_warp_sum(weighted);
  if (lane == 0) {
    s_sum[warp] = sum;
    s_weighted[warp] = weighted;
  }
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) >> 5;
    sum = lane < warps ? s_sum[lane] : 0;
    weighted = lane < warps ? s_weighted[lane] : 0;
    sum = mx_warp_sum(sum);
    weighted = mx_warp_sum(weighted);
    if (lane == 0) {
      atomicAdd(out, sum);
      atomicAdd(out + 1, weighted);
    }
  }
}

// Whole rows: one warp per row at a time (grid-stride over rows). out[0] += sum of row sums,
// out[1] += sum of rowSum * (row + 1). out must be zeroed first. blockDim.x is a multiple of 32.
extern "C" __global__ void mx_digest_rows(const uint8_t* src, unsigned long long rows, unsigned long long* out) {
  int lane = threadIdx.x & 31;
  unsigned long long warps = ((unsigned long long)gridDim.x * blockDim.x) >> 5;
  unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  unsigned long long sum = 0;
  unsigned long long weighted = 0;
  uint32_t shift = (uint32_t)(((uintptr_t)src & 3) * 8);
  bool vec = ((uintptr_t)src & 15) == 0;
  for (unsigned long long r = warp; r < rows; r += warps) {
    const uint8_t* row = src + r * MX_ROW_BYTES;
    long long rowSum = 0;
    if (vec) {
      // 256 int4 per row, 8 per lane, each step coalesced over the warp.
      const int4* v = (const int4*)row;
#pragma unroll
      for (int k = 0; k < 8; k++) {
        int4 q = __ldg(v + k * 32 + lane);
        rowSum += (long long)q.x + (long long)q.y + (long long)q.z + (long long)q.w;
      }
    } else {
#pragma unroll 8
      for (int k = 0; k < 32; k++) {
        rowSum += mx_word(row + (size_t)(k * 32 + lane) * 4, shift);
      }
    }
    unsigned long long rs = mx_warp_sum((unsigned long long)rowSum);
    if (lane == 0) {
      sum += rs;
      weighted += rs * (r + 1);
    }
  }
  mx_block_add(sum, weighted, out);
}

// The tail: 'words' (< 1024) words starting at src, weighted 1..words, into out[0] and out[1]; and the
// 'ragged' (< 4) bytes after them, summed unsigned into out[2]. One block; out must be zeroed first.
extern "C" __global__ void mx_digest_tail(const uint8_t* src, unsigned int words, unsigned int ragged,
                                          unsigned long long* out) {
  uint32_t shift = (uint32_t)(((uintptr_t)src & 3) * 8);
  unsigned long long sum = 0;
  unsigned long long weighted = 0;
  for (unsigned int j = threadIdx.x; j < words; j += blockDim.x) {
    long long w = mx_word(src + (size_t)j * 4, shift);
    sum += (unsigned long long)w;
    weighted += (unsigned long long)w * (j + 1);
  }
  mx_block_add(sum, weighted, out);
  if (threadIdx.x == 0) {
    unsigned long long r = 0;
    for (unsigned int i = 0; i < ragged; i++) r += src[(size_t)words * 4 + i];
    out[2] = r;
  }
}
