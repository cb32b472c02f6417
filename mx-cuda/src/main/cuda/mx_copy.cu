// The strided view copy of a re-slice (dev.mx.refit.reslice.ViewCopy on the device): an inner run of
// 'inner' elements with byte strides, under up to three outer dims with byte strides, converting each
// element from one floating-point type to another (bit-identical with the CPU casts) or copying it
// unchanged when the types are equal. A contiguous cast is the case of one outer element.
#include "mx_float.cuh"

__device__ __forceinline__ uint32_t mx_load(const uint8_t* p, int size) {
  switch (size) {
    case 4: {
      if (((uintptr_t)p & 3) == 0) return *(const uint32_t*)p;
      return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
    }
    case 2: {
      if (((uintptr_t)p & 1) == 0) return *(const uint16_t*)p;
      return (uint32_t)p[0] | ((uint32_t)p[1] << 8);
    }
    default: return p[0];
  }
}

__device__ __forceinline__ void mx_store(uint8_t* p, int size, uint32_t v) {
  switch (size) {
    case 4:
      if (((uintptr_t)p & 3) == 0) {
        *(uint32_t*)p = v;
      } else {
        p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
      }
      break;
    case 2:
      if (((uintptr_t)p & 1) == 0) {
        *(uint16_t*)p = (uint16_t)v;
      } else {
        p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
      }
      break;
    default: p[0] = (uint8_t)v;
  }
}

__device__ __forceinline__ int mx_size(int type) {
  return type == MX_F32 ? 4 : (type == MX_BF16 || type == MX_F16) ? 2 : 1;
}

// Element e of the copy is inner index i = e mod inner and outer index o = e / inner, o split into
// (o0, o1, o2) over extents (n0, n1, n2) with n2 innermost. Strides are in bytes.
extern "C" __global__ void mx_view_copy(const uint8_t* src, uint8_t* dst, int from, int to,
                                        unsigned long long inner, long long srcInner, long long dstInner,
                                        unsigned long long n0, unsigned long long n1, unsigned long long n2,
                                        long long src0, long long src1, long long src2,
                                        long long dst0, long long dst1, long long dst2) {
  unsigned long long total = inner * n0 * n1 * n2;
  unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
  int fromSize = mx_size(from);
  int toSize = mx_size(to);
  bool flat = n0 * n1 * n2 == 1;
  for (unsigned long long e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
    long long so;
    long long dof;
    if (flat) {
      so = (long long)e * srcInner;
      dof = (long long)e * dstInner;
    } else {
      unsigned long long o = e / inner;
      unsigned long long i = e - o * inner;
      unsigned long long o2 = o % n2;
      unsigned long long o01 = o / n2;
      unsigned long long o1 = o01 % n1;
      unsigned long long o0 = o01 / n1;
      so = (long long)i * srcInner + (long long)o0 * src0 + (long long)o1 * src1 + (long long)o2 * src2;
      dof = (long long)i * dstInner + (long long)o0 * dst0 + (long long)o1 * dst1 + (long long)o2 * dst2;
    }
    uint32_t raw = mx_load(src + so, fromSize);
    mx_store(dst + dof, toSize, mx_convert_bits(raw, from, to));
  }
}
