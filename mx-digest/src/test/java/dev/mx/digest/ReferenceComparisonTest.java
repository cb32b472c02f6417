package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.math.BigInteger;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The fast digest against the BigInteger reference on thousands of random lengths and contents. */
class ReferenceComparisonTest {
  private static final int MAX_LENGTH = 3 * ShardDigest.ROW_BYTES + 4095;

  @Test
  void thousandsOfRandomLengthsAndContents() {
    Random random = new Random(20260730);
    TestBytes.Pattern[] patterns = TestBytes.Pattern.values();
    try (Arena arena = Arena.ofConfined()) {
      for (int i = 0; i < 2000; i++) {
        int length =
            switch (i % 4) {
              case 0 -> random.nextInt(MAX_LENGTH + 1);
              case 1 -> random.nextInt(4) * ShardDigest.ROW_BYTES + random.nextInt(8);
              case 2 -> random.nextInt(64);
              default -> MAX_LENGTH - random.nextInt(8);
            };
        TestBytes.Pattern pattern = patterns[i % patterns.length];
        byte[] input = pattern.fill(length, random);
        String expected = ReferenceDigest.digest(input);
        String where = pattern + " length " + length;
        assertEquals(expected, ShardDigest.digest(MemorySegment.ofArray(input)), where);
        MemorySegment off = TestBytes.nativeCopy(arena, input, random.nextInt(8));
        assertEquals(expected, ShardDigest.digest(off), where + " native");
        if (i % 10 == 0) {
          assertScalarsMatch(input, ShardDigest.scalars(off), where);
        }
      }
    }
  }

  private static void assertScalarsMatch(byte[] input, long[] actual, String where) {
    List<BigInteger> reference = ReferenceDigest.scalars(input);
    long[] expected = reference.stream().mapToLong(BigInteger::longValue).toArray();
    assertArrayEquals(expected, actual, where);
  }
}
