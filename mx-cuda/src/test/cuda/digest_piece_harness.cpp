// Host harness for mx_digest_piece.cuh (HostDigestPieceTest): the device kernel's arithmetic, one thread.
// Input (argv[1], little-endian u64s): cases; per case: n, then n bytes (padded to 8), then the number of
// pieces and each piece's (offset, length), in the order they are added. Output (stdout, u64s): per case
// the five sums, then 1 when the copy the pieces made equals the region, else 0.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mx_digest_piece.cuh"

static unsigned long long next(FILE* f) {
  unsigned long long v;
  if (fread(&v, 8, 1, f) != 1) { fprintf(stderr, "short input\n"); exit(2); }
  return v;
}

int main(int argc, char** argv) {
  FILE* in = fopen(argv[1], "rb");
  if (!in) { perror(argv[1]); return 2; }
  unsigned long long cases = next(in);
  for (unsigned long long c = 0; c < cases; c++) {
    unsigned long long n = next(in);
    std::vector<uint8_t> region((n + 7) / 8 * 8);
    if (!region.empty() && fread(region.data(), 1, region.size(), in) != region.size()) return 2;
    std::vector<uint8_t> copy(n + 1, 0xA5);
    unsigned long long words = n / 4, rows = words / 1024;
    unsigned long long acc[5] = {0, 0, 0, 0, 0};
    unsigned long long pieces = next(in);
    for (unsigned long long i = 0; i < pieces; i++) {
      unsigned long long offset = next(in), len = next(in);
      // The piece on its own: a buffer of exactly its bytes, as a device piece is.
      std::vector<uint8_t> piece(region.begin() + offset, region.begin() + offset + len);
      std::vector<uint8_t> dst(len + 1, 0);
      unsigned long long first, end;
      mx_piece_words(offset, len, words, &first, &end);
      for (unsigned long long k = first; k < end; k++) {
        const uint8_t* p = piece.data() + (4 * k - offset);
        uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        memcpy(dst.data() + (4 * k - offset), p, 4);
        mx_piece_add_value(k, (unsigned long long)(long long)(int32_t)u, rows, acc);
      }
      mx_piece_edges(piece.data(), dst.data(), offset, len, words, rows, acc);
      memcpy(copy.data() + offset, dst.data(), len);
    }
    fwrite(acc, 8, 5, stdout);
    unsigned long long same = memcmp(copy.data(), region.data(), n) == 0;
    fwrite(&same, 8, 1, stdout);
  }
  return 0;
}
