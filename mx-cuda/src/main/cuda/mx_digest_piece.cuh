// One piece of a region's shard digest (dev.mx.digest.ShardDigest, seed 002) at any byte offset of the
// region, for pieces that land in any order (dev.mx.api.digest.DigestParts). Every scalar the digest
// hashes is a sum over the region's words mod 2^64, each word weighted by its position (row + 1 for whole
// rows, index in the tail + 1 after them), and a word's signed value is the sum of its bytes' values
// (the top byte signed). So each byte adds on its own, wherever it lies, and a piece's sums are the sums
// of its bytes: whole words in the middle, single bytes at its two edges and after the last word.
// Accumulators: acc[0] row sum, acc[1] row sum weighted, acc[2] tail sum, acc[3] tail weighted,
// acc[4] the ragged bytes (unsigned) -- the layout of mx_digest.cu's out.
// Host and device: HostDigestPieceTest compiles this header for the host and checks it against the CPU digest.
#pragma once
#include <stdint.h>

#ifdef __CUDACC__
#define MX_PIECE_HD __host__ __device__ __forceinline__
#else
#define MX_PIECE_HD static inline
#endif

#define MX_PIECE_ROW_WORDS 1024ULL

// Adds a value that sits in word k of a region of 'words' words and 'rows' whole rows.
MX_PIECE_HD void mx_piece_add_value(unsigned long long k, unsigned long long v, unsigned long long rows,
                                    unsigned long long* acc) {
  unsigned long long rowWords = rows * MX_PIECE_ROW_WORDS;
  if (k < rowWords) {
    acc[0] += v;
    acc[1] += v * ((k >> 10) + 1);  // k / 1024
  } else {
    acc[2] += v;
    acc[3] += v * (k - rowWords + 1);
  }
}

// Adds the byte b found at byte p of the region.
MX_PIECE_HD void mx_piece_add_byte(unsigned long long p, uint8_t b, unsigned long long words,
                                   unsigned long long rows, unsigned long long* acc) {
  if (p >= 4 * words) {
    acc[4] += b;  // a ragged byte after the last whole word
    return;
  }
  unsigned int lane = (unsigned int)(p & 3);
  // The top byte of a little-endian int32 is its sign: -128..127 times 2^24 (multiplied, not shifted).
  long long value = lane == 3 ? (long long)(int8_t)b * 16777216LL : (long long)b << (8 * lane);
  mx_piece_add_value(p / 4, (unsigned long long)value, rows, acc);
}

// The whole words of a piece of 'len' bytes at byte 'offset' of the region: [*first, *end) (empty when
// *end <= *first). The piece's other bytes are its edges.
MX_PIECE_HD void mx_piece_words(unsigned long long offset, unsigned long long len, unsigned long long words,
                                unsigned long long* first, unsigned long long* end) {
  unsigned long long f = (offset + 3) / 4;
  unsigned long long e = (offset + len) / 4;
  if (e > words) e = words;
  *first = f;
  *end = e;
}

// Adds (and, with dst, copies) the piece's edge bytes: those outside its whole words.
MX_PIECE_HD void mx_piece_edges(const uint8_t* src, uint8_t* dst, unsigned long long offset,
                                unsigned long long len, unsigned long long words, unsigned long long rows,
                                unsigned long long* acc) {
  unsigned long long first, end;
  mx_piece_words(offset, len, words, &first, &end);
  unsigned long long stop = offset + len;
  unsigned long long headEnd = end > first ? 4 * first : stop;
  if (headEnd > stop) headEnd = stop;
  for (unsigned long long p = offset; p < headEnd; p++) {
    uint8_t b = src[p - offset];
    if (dst) dst[p - offset] = b;
    mx_piece_add_byte(p, b, words, rows, acc);
  }
  if (end > first) {
    for (unsigned long long p = 4 * end; p < stop; p++) {
      uint8_t b = src[p - offset];
      if (dst) dst[p - offset] = b;
      mx_piece_add_byte(p, b, words, rows, acc);
    }
  }
}
