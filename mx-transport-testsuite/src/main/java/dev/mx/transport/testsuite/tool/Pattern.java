package dev.mx.transport.testsuite.tool;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Deterministic contents for test regions: little-endian 64-bit word {@code k} of region {@code r}
 * is {@code splitmix64(seed ^ r * 0x9E3779B97F4A7C15 ^ k)}, so any byte of any region can be
 * recomputed without keeping a copy, and a byte that lands at a wrong offset or from a wrong region
 * shows.
 */
public record Pattern(long seed) {
  private static final ValueLayout.OfLong WORD =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final long CHUNK = 1 << 20;

  /** Word {@code k} of region {@code region}. */
  public long word(int region, long k) {
    long x = seed ^ (region * 0x9E3779B97F4A7C15L) ^ k;
    x += 0x9E3779B97F4A7C15L;
    long z = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Byte {@code offset} of region {@code region}. */
  public byte byteAt(int region, long offset) {
    return (byte) (word(region, offset >>> 3) >>> ((offset & 7) * 8));
  }

  /** Fills {@code target} with region {@code region} from its offset 0. */
  public void fill(MemorySegment target, int region) {
    write(target, 0, region, 0, target.byteSize());
  }

  /**
   * Writes bytes {@code [from, from + n)} of region {@code region} to {@code target} at {@code at}.
   */
  public void write(MemorySegment target, long at, int region, long from, long n) {
    long k = from >>> 3;
    int skip = (int) (from & 7);
    long done = 0;
    if (skip != 0) {
      long w = word(region, k++);
      for (int b = skip; b < 8 && done < n; b++) {
        target.set(ValueLayout.JAVA_BYTE, at + done++, (byte) (w >>> (b * 8)));
      }
    }
    for (; done + 8 <= n; done += 8) {
      target.set(WORD, at + done, word(region, k++));
    }
    if (done < n) {
      long w = word(region, k);
      for (int b = 0; done < n; b++) {
        target.set(ValueLayout.JAVA_BYTE, at + done++, (byte) (w >>> (b * 8)));
      }
    }
  }

  /**
   * Compares {@code actual[at, at + n)} with bytes {@code [from, from + n)} of region {@code
   * region}; returns the offset (relative to {@code at}) of the first differing byte, or -1 when
   * all match.
   */
  public long mismatch(MemorySegment actual, long at, int region, long from, long n) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment expected = arena.allocate(Math.min(n, CHUNK) + 16);
      for (long done = 0; done < n; done += CHUNK) {
        long len = Math.min(CHUNK, n - done);
        write(expected, 0, region, from + done, len);
        long m = MemorySegment.mismatch(expected, 0, len, actual, at + done, at + done + len);
        if (m >= 0) {
          return done + m;
        }
      }
      return -1;
    }
  }
}
