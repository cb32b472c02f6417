// Element conversions between f32, bf16, f16 and the OCP fp8 formats, as integer bit operations so that
// they are bit-identical with mx-refit's CPU casts (dev.mx.refit.cast.Casts / MiniFloat, which follow
// java.lang.Float and PyTorch's CPU copy_). Every conversion goes through the f32 bit pattern.
// Host and device: a test compiles this header for the host and compares it with the Java casts.
#pragma once
#include <stdint.h>

#ifdef __CUDACC__
#define MX_HD __host__ __device__ __forceinline__
#else
#define MX_HD static inline
#endif

// Type codes shared with dev.mx.cuda.CudaKernels (the Java launch code passes these).
#define MX_F32 0
#define MX_BF16 1
#define MX_F16 2
#define MX_F8_E4M3FN 3
#define MX_F8_E5M2 4

MX_HD uint32_t mx_bf16_to_f32(uint32_t h) { return (h & 0xFFFFu) << 16; }

// Round to nearest even; every NaN becomes 0x7FC0 (PyTorch 2.x).
MX_HD uint32_t mx_f32_to_bf16(uint32_t bits) {
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return ((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16) & 0xFFFFu;
}

// NaNs: java.lang.Float's f16 conversions are HotSpot intrinsics on x86-64 (F16C vcvtph2ps / vcvtps2ph, in
// the interpreter too), which quiet a NaN and keep its high payload bits; the JDK's Java fallback keeps a
// signaling NaN signaling instead. The CPU casts mx compares with run on x86-64, so these follow F16C.

// java.lang.Float.float16ToFloat: exact; a NaN is quieted, its payload kept.
MX_HD uint32_t mx_f16_to_f32(uint32_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0x1Fu) return mant == 0 ? (sign | 0x7F800000u) : (sign | 0x7FC00000u | (mant << 13));
  if (exp != 0) return sign | ((exp + 112u) << 23) | (mant << 13);
  if (mant == 0) return sign;
  // Subnormal: normalise; the value mant * 2^-24 is exact in f32.
  int e = 113;  // biased f32 exponent of 2^-14
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    e--;
  }
  return sign | ((uint32_t)e << 23) | ((mant & 0x3FFu) << 13);
}

// java.lang.Float.floatToFloat16: round to nearest even, overflow to infinity, subnormals kept; a NaN is
// quieted and keeps the high 9 bits of its payload (F16C).
MX_HD uint32_t mx_f32_to_f16(uint32_t doppel) {
  uint32_t sign = (doppel >> 16) & 0x8000u;
  uint32_t abs = doppel & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) {
    return sign | 0x7E00u | ((doppel & 0x007FE000u) >> 13);
  }
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // >= 65504 + half an ulp: infinity
  if (abs <= 0x33000000u) return sign;            // <= 2^-25: zero
  int exp = (int)(abs >> 23) - 127;               // -25 .. 15 here
  int expdelta = 0;
  uint32_t msb = 0;
  if (exp < -14) {
    expdelta = -14 - exp;
    exp = -15;
    msb = 0x00800000u;
  }
  uint32_t f_signif = (doppel & 0x007FFFFFu) | msb;
  uint32_t signif = f_signif >> (13 + expdelta);
  uint32_t lsb = f_signif & (1u << (13 + expdelta));
  uint32_t round = f_signif & (1u << (12 + expdelta));
  uint32_t sticky = f_signif & ((1u << (12 + expdelta)) - 1u);
  if (round != 0 && (lsb | sticky) != 0) signif++;
  return (sign | ((uint32_t)((exp + 15) << 10) + signif)) & 0xFFFFu;
}

// The fp8 formats of dev.mx.refit.cast.MiniFloat: e4m3fn (bias 7, no infinity, S.1111.111 is NaN,
// overflow gives NaN) and e5m2 (bias 15, IEEE-like).
struct mx_minifloat {
  int mant_bits;
  int bias;
  int has_inf;
  uint32_t max_finite;
  uint32_t nan_code;
  uint32_t overflow_code;
};

MX_HD mx_minifloat mx_fp8_format(int code) {
  mx_minifloat f;
  if (code == MX_F8_E4M3FN) {
    f.mant_bits = 3; f.bias = 7; f.has_inf = 0; f.nan_code = 0x7F; f.max_finite = 0x7E; f.overflow_code = 0x7F;
  } else {
    f.mant_bits = 2; f.bias = 15; f.has_inf = 1; f.nan_code = 0x7F; f.max_finite = 0x7B; f.overflow_code = 0x7C;
  }
  return f;
}

// Decodes as MiniFloat.decodeSlow: NaN is the canonical f32 NaN with the code's sign.
MX_HD uint32_t mx_fp8_to_f32(uint32_t code, mx_minifloat f) {
  uint32_t sign = (code & 0x80u) << 24;
  uint32_t mag = code & 0x7Fu;
  uint32_t exp = mag >> f.mant_bits;
  uint32_t mant = mag & ((1u << f.mant_bits) - 1u);
  if (mag == f.nan_code || (f.has_inf && mag > f.overflow_code)) return sign | 0x7FC00000u;
  if (f.has_inf && mag == f.overflow_code) return sign | 0x7F800000u;
  if (mag == 0) return sign;
  int e;  // unbiased exponent of the leading bit
  uint32_t m;
  if (exp == 0) {
    e = 1 - f.bias;
    m = mant;
    while ((m & (1u << f.mant_bits)) == 0) {
      m <<= 1;
      e--;
    }
  } else {
    e = (int)exp - f.bias;
    m = mant | (1u << f.mant_bits);
  }
  return sign | ((uint32_t)(e + 127) << 23) | ((m & ((1u << f.mant_bits) - 1u)) << (23 - f.mant_bits));
}

// Encodes as MiniFloat.encodeSlow: integer round to nearest even; NaN keeps its sign.
MX_HD uint32_t mx_f32_to_fp8(uint32_t bits, mx_minifloat f) {
  uint32_t sign = (bits >> 24) & 0x80u;
  uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | f.nan_code;
  if (abs == 0x7F800000u) return sign | f.overflow_code;
  if (abs == 0) return sign;
  int f32exp = (int)(abs >> 23);
  uint32_t significand = f32exp == 0 ? abs : ((abs & 0x7FFFFFu) | 0x800000u);
  int exp = f32exp == 0 ? -126 : f32exp - 127;
  int min_normal_exp = 1 - f.bias;
  int denorm = min_normal_exp - exp;
  int shift = 23 - f.mant_bits + (denorm > 0 ? denorm : 0);
  uint32_t code;
  if (shift >= 26) {
    code = 0;
  } else {
    uint32_t kept = significand >> shift;
    uint32_t rest = significand & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u) != 0)) kept++;
    code = exp >= min_normal_exp ? (((uint32_t)(exp + f.bias - 1)) << f.mant_bits) + kept : kept;
  }
  if (code > f.max_finite) return sign | f.overflow_code;
  return sign | code;
}

MX_HD uint32_t mx_to_f32_bits(uint32_t raw, int from) {
  switch (from) {
    case MX_F32: return raw;
    case MX_BF16: return mx_bf16_to_f32(raw);
    case MX_F16: return mx_f16_to_f32(raw);
    default: return mx_fp8_to_f32(raw & 0xFFu, mx_fp8_format(from));
  }
}

MX_HD uint32_t mx_from_f32_bits(uint32_t bits, int to) {
  switch (to) {
    case MX_F32: return bits;
    case MX_BF16: return mx_f32_to_bf16(bits);
    case MX_F16: return mx_f32_to_f16(bits);
    default: return mx_f32_to_fp8(bits, mx_fp8_format(to));
  }
}

// One element, raw bits in and out (low bits used).
MX_HD uint32_t mx_convert_bits(uint32_t raw, int from, int to) {
  return from == to ? raw : mx_from_f32_bits(mx_to_f32_bits(raw, from), to);
}
