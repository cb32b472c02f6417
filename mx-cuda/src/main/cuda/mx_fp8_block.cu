// FP8 block quantization (dev.mx.refit.cast.BlockQuantizer on the device), bit-identical with the CPU:
// the last two dims of a row-major tensor (leading dims are separate matrices) cut into block x block
// tiles, partial at the edges. Per tile, over values widened to f32: amax = max(max|x|, 1e-4) (any NaN:
// the canonical NaN); code = e4m3fn(x * (448 / amax)) in f32 with round to nearest even, magnitudes
// above 448 saturated to 448 and NaN kept; scale_inv = amax / 448 in f32, row-major per matrix.
// One CUDA block per tile (grid-stride over tiles): a max reduction, then every thread encodes.
#include "mx_float.cuh"

#define MX_QUANT_THREADS 256

__device__ __forceinline__ uint32_t mx_quant_load_bits(const uint8_t* src, int from, unsigned long long i) {
  if (from == MX_F32) return ((const uint32_t*)src)[i];
  uint32_t h = ((const uint16_t*)src)[i];
  return from == MX_BF16 ? mx_bf16_to_f32(h) : mx_f16_to_f32(h);
}

// The saturating e4m3fn encoding of a scaled f32 (the clamp of BlockQuantizer.encode, in integers).
__device__ __forceinline__ uint32_t mx_quant_encode(uint32_t bits) {
  uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return mx_f32_to_fp8(bits, mx_fp8_format(MX_F8_E4M3FN));
  uint32_t sign = (bits >> 24) & 0x80u;
  if (abs > 0x43E00000u) return sign | 0x7Eu;  // above 448, infinity included: 448
  return mx_f32_to_fp8(bits, mx_fp8_format(MX_F8_E4M3FN));
}

// Blocks of MX_QUANT_THREADS threads. Element counts in elements; scales is f32.
extern "C" __global__ void mx_fp8_block_quantize(const uint8_t* src, int from, uint8_t* dst, float* scales,
                                                 unsigned long long matrices, unsigned long long rows,
                                                 unsigned long long cols, int block) {
  __shared__ uint32_t warp_max[MX_QUANT_THREADS / 32];
  __shared__ float tile_factor;
  unsigned long long br = (rows + block - 1) / block;
  unsigned long long bc = (cols + block - 1) / block;
  unsigned long long tiles = matrices * br * bc;
  for (unsigned long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    unsigned long long m = t / (br * bc);
    unsigned long long ij = t - m * br * bc;
    unsigned long long r0 = ij / bc * block;
    unsigned long long c0 = ij % bc * block;
    unsigned long long h = min((unsigned long long)block, rows - r0);
    unsigned long long w = min((unsigned long long)block, cols - c0);
    unsigned long long base = m * rows * cols;
    // |x| as bits: non-negative floats order as their bits, NaN above infinity.
    uint32_t local = 0;
    for (unsigned long long k = threadIdx.x; k < h * w; k += blockDim.x) {
      unsigned long long i = base + (r0 + k / w) * cols + c0 + k % w;
      local = max(local, mx_quant_load_bits(src, from, i) & 0x7FFFFFFFu);
    }
    for (int off = 16; off > 0; off >>= 1) local = max(local, __shfl_down_sync(0xFFFFFFFFu, local, off));
    if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = local;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t mb = 0;
      for (int k = 0; k < (int)(blockDim.x >> 5); k++) mb = max(mb, warp_max[k]);
      float amax = mb > 0x7F800000u ? __int_as_float(0x7FC00000) : fmaxf(__uint_as_float(mb), 1e-4f);
      // IEEE division (no fast math): the same f32 quotients as the CPU.
      // The GPU's NaN is 0x7FFFFFFF; the CPU's (x86) is the canonical 0x7FC00000: write that.
      tile_factor = __fdiv_rn(448.0f, amax);
      scales[(m * br + ij / bc) * bc + ij % bc] =
          isnan(amax) ? __int_as_float(0x7FC00000) : __fdiv_rn(amax, 448.0f);
    }
    __syncthreads();
    float factor = tile_factor;
    for (unsigned long long k = threadIdx.x; k < h * w; k += blockDim.x) {
      unsigned long long i = base + (r0 + k / w) * cols + c0 + k % w;
      uint32_t xb = mx_quant_load_bits(src, from, i);
      // In a NaN tile the CPU's product is the NaN operand: x's own when x is NaN, else the factor's.
      dst[i] = isnan(factor) ? (uint8_t)(0x7Fu | ((xb & 0x7FFFFFFFu) > 0x7F800000u ? (xb >> 24) & 0x80u : 0u))
                             : (uint8_t)mx_quant_encode(__float_as_uint(__fmul_rn(__uint_as_float(xb), factor)));
    }
    __syncthreads();  // tile_factor and warp_max are reused by the next tile
  }
}
