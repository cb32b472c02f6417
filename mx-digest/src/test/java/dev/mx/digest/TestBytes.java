package dev.mx.digest;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/** Test inputs: native copies at chosen misalignments and patterned contents. */
final class TestBytes {
  private TestBytes() {}

  /**
   * {@code bytes} copied into native memory starting {@code misalignment} bytes past a 64-byte
   * boundary.
   */
  static MemorySegment nativeCopy(Arena arena, byte[] bytes, int misalignment) {
    MemorySegment block = arena.allocate(bytes.length + misalignment + 1L, 64);
    MemorySegment slice = block.asSlice(misalignment, bytes.length);
    MemorySegment.copy(MemorySegment.ofArray(bytes), 0, slice, 0, bytes.length);
    return slice;
  }

  /** The content patterns the comparison tests cycle through. */
  enum Pattern {
    RANDOM,
    ALL_FF,
    ALTERNATING_SIGN,
    EXTREMES,
    ZEROS,
    SMALL_NEGATIVE;

    byte[] fill(int length, Random random) {
      byte[] b = new byte[length];
      switch (this) {
        case RANDOM -> random.nextBytes(b);
        case ALL_FF -> java.util.Arrays.fill(b, (byte) 0xFF);
        case ALTERNATING_SIGN -> {
          // Words alternate between a large positive and a large negative value.
          for (int w = 0; w * 4 < length; w++) {
            int v = random.nextInt(1 << 30) + (1 << 30);
            putWord(b, w, (w & 1) == 0 ? v : -v);
          }
        }
        case EXTREMES -> {
          for (int w = 0; w * 4 < length; w++) {
            putWord(b, w, random.nextBoolean() ? Integer.MIN_VALUE : Integer.MAX_VALUE);
          }
        }
        case ZEROS -> {}
        case SMALL_NEGATIVE -> {
          for (int w = 0; w * 4 < length; w++) {
            putWord(b, w, -1 - random.nextInt(256));
          }
        }
        default -> throw new AssertionError(this);
      }
      return b;
    }
  }

  /** Writes the little-endian word {@code w}, truncated where the array ends. */
  static void putWord(byte[] b, int w, int value) {
    for (int i = 0; i < 4 && 4 * w + i < b.length; i++) {
      b[4 * w + i] = (byte) (value >>> (8 * i));
    }
  }

  /** Random bytes in native memory. */
  static MemorySegment randomNative(Arena arena, long length, long seed) {
    MemorySegment s = arena.allocate(Math.max(length, 1), 64).asSlice(0, length);
    Random random = new Random(seed);
    long at = 0;
    for (; at + 8 <= length; at += 8) {
      s.set(ValueLayout.JAVA_LONG_UNALIGNED, at, random.nextLong());
    }
    for (; at < length; at++) {
      s.set(ValueLayout.JAVA_BYTE, at, (byte) random.nextInt());
    }
    return s;
  }
}
