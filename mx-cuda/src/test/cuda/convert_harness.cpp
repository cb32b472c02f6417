// Runs the device conversions of mx_float.cuh on the host, over an enumeration of inputs that
// dev.mx.cuda.HostConversionTest repeats in Java: for each pair (from, to) of distinct type codes 0..4, every
// code of an 8- or 16-bit source, or for f32 every high half with a few low halves; each result is written to
// stdout as a little-endian uint32.
#include <stdio.h>
#include "mx_float.cuh"

static const uint32_t LOW[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0x1000u, 0xFFFFu};

static void put(uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  fwrite(b, 1, 4, stdout);
}

int main() {
  for (int from = 0; from <= 4; from++) {
    for (int to = 0; to <= 4; to++) {
      if (from == to) continue;
      if (from == MX_F32) {
        for (uint32_t hi = 0; hi < 65536u; hi++)
          for (uint32_t lo : LOW) put(mx_convert_bits((hi << 16) | lo, from, to));
      } else {
        uint32_t n = (from == MX_BF16 || from == MX_F16) ? 65536u : 256u;
        for (uint32_t c = 0; c < n; c++) put(mx_convert_bits(c, from, to));
      }
    }
  }
  return 0;
}
