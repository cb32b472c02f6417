// Device helpers the digest kernels share: unaligned little-endian words and warp sums.
#pragma once
#include <stdint.h>

// The little-endian word at byte address p; 'shift' is 8 * (p mod 4). The aligned word after the one
// holding p is read only when p is misaligned, and then it holds bytes of this word: never past the
// buffer, and always inside the same allocation.
__device__ __forceinline__ int32_t mx_word(const uint8_t* p, uint32_t shift) {
  const uint32_t* a = (const uint32_t*)((uintptr_t)p & ~(uintptr_t)3);
  if (shift == 0) return (int32_t)__ldg(a);
  return (int32_t)__funnelshift_r(__ldg(a), __ldg(a + 1), shift);
}

__device__ __forceinline__ unsigned long long mx_warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
  return v;
}
