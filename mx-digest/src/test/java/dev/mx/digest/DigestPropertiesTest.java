package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The documented properties of the digest, pinned. */
class DigestPropertiesTest {
  private static final int ROW = ShardDigest.ROW_BYTES;

  @Test
  void swappingTwoWholeRowsChangesTheDigest() {
    byte[] original = new byte[5 * ROW + 12];
    new Random(1).nextBytes(original);
    byte[] swapped = original.clone();
    System.arraycopy(original, 1 * ROW, swapped, 3 * ROW, ROW);
    System.arraycopy(original, 3 * ROW, swapped, 1 * ROW, ROW);
    assertNotEquals(digest(original), digest(swapped));
    // Only the weighted row sum can see it: the plain sums are order-independent.
    long[] a = ShardDigest.scalars(MemorySegment.ofArray(original));
    long[] b = ShardDigest.scalars(MemorySegment.ofArray(swapped));
    assertEquals(a[1], b[1], "row sum");
    assertNotEquals(a[2], b[2], "weighted row sum");
  }

  @Test
  void swappingTwoWordsInsideOneRowDoesNotChangeTheDigest() {
    // Documented limitation of the reference: a row contributes only its sum.
    byte[] original = new byte[3 * ROW];
    new Random(2).nextBytes(original);
    byte[] swapped = original.clone();
    int row = 2 * ROW;
    System.arraycopy(original, row + 4 * 7, swapped, row + 4 * 900, 4);
    System.arraycopy(original, row + 4 * 900, swapped, row + 4 * 7, 4);
    assertFalse(Arrays.equals(original, swapped), "the swap must change the bytes");
    assertEquals(digest(original), digest(swapped));
  }

  @Test
  void swappingTwoTailWordsChangesTheDigest() {
    // The tail after the last whole row is weighted word by word.
    byte[] original = new byte[ROW + 40];
    new Random(3).nextBytes(original);
    byte[] swapped = original.clone();
    System.arraycopy(original, ROW, swapped, ROW + 8, 4);
    System.arraycopy(original, ROW + 8, swapped, ROW, 4);
    assertFalse(Arrays.equals(original, swapped));
    assertNotEquals(digest(original), digest(swapped));
  }

  @Test
  void theSameBytesAtStartOffsetsZeroToSevenDigestEqually() {
    Random random = new Random(4);
    try (Arena arena = Arena.ofConfined()) {
      for (int length : new int[] {0, 1, 3, 4, 7, 4095, 4096, 4099, 3 * ROW + 4095, 9 * ROW + 2}) {
        byte[] input = new byte[length];
        random.nextBytes(input);
        String expected = digest(input);
        byte[] padded = new byte[length + 8];
        for (int offset = 0; offset < 8; offset++) {
          assertEquals(
              expected,
              ShardDigest.digest(TestBytes.nativeCopy(arena, input, offset)),
              "native, length " + length + " at +" + offset);
          System.arraycopy(input, 0, padded, offset, length);
          assertEquals(
              expected,
              ShardDigest.digest(MemorySegment.ofArray(padded).asSlice(offset, length)),
              "heap, length " + length + " at +" + offset);
        }
      }
    }
  }

  @Test
  void combiningRowRunsWrapsModTwoToThe64() {
    Random random = new Random(5);
    long[] edge = {Long.MAX_VALUE, Long.MIN_VALUE, -1, 1L << 62, (1L << 41) - 1, -(1L << 41)};
    for (int i = 0; i < 2000; i++) {
      RowSums a = new RowSums(random.nextLong(1L << 40), pick(random, edge), pick(random, edge));
      RowSums b = new RowSums(random.nextInt(1 << 20), pick(random, edge), pick(random, edge));
      RowSums c = a.followedBy(b);
      BigInteger weighted =
          big(a.weightedSum()).add(big(b.weightedSum())).add(big(a.rows()).multiply(big(b.sum())));
      assertEquals(a.rows() + b.rows(), c.rows());
      assertEquals(big(a.sum()).add(big(b.sum())).longValue(), c.sum());
      assertEquals(weighted.longValue(), c.weightedSum(), "weighted sum of " + a + " then " + b);
    }
  }

  @Test
  void syntheticRowSumsWhoseWeightedSumOverflowsCombineLikeTheReference() {
    // Row sums at the extremes a real row can reach (1024 words of +-2^31): the weighted sum passes
    // 2^63.
    Random random = new Random(6);
    int rows = 100_000;
    RowSums acc = RowSums.EMPTY;
    BigInteger sum = BigInteger.ZERO;
    BigInteger weighted = BigInteger.ZERO;
    for (int r = 0; r < rows; r++) {
      long rowSum =
          random.nextBoolean() ? 1024L * Integer.MAX_VALUE : 1024L * Integer.MIN_VALUE + r;
      acc = acc.followedBy(RowSums.ofRow(rowSum));
      sum = sum.add(big(rowSum));
      weighted = weighted.add(big(rowSum).multiply(big(r + 1)));
    }
    assertTrue(weighted.abs().bitLength() > 63, "the case must overflow int64: " + weighted);
    assertEquals(sum.longValue(), acc.sum());
    assertEquals(weighted.longValue(), acc.weightedSum());
  }

  @Test
  void aLargeBufferWhoseWeightedRowSumOverflowsMatchesTheReference() {
    // 4100 rows of INT32_MAX: each row sums to 1024 * (2^31 - 1) and sum(r * rowSum) exceeds 2^63.
    // Above
    // the vector kernel's limit, so the scalar kernel sums it (the 3-thread run splits it below the
    // limit).
    int rows = 4100;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = arena.allocate((long) rows * ROW + 2, 64);
      for (long at = 0; at + 4 <= s.byteSize(); at += 4) {
        s.set(ValueLayout.JAVA_INT_UNALIGNED, at, Integer.MAX_VALUE);
      }
      s.set(ValueLayout.JAVA_BYTE, s.byteSize() - 2, (byte) 0xAB);
      s.set(ValueLayout.JAVA_BYTE, s.byteSize() - 1, (byte) 0xCD);
      BigInteger rowSum = big(1024).multiply(big(Integer.MAX_VALUE));
      BigInteger weighted = rowSum.multiply(big((long) rows * (rows + 1) / 2));
      assertTrue(weighted.bitLength() > 63, "the case must overflow int64: " + weighted);
      long[] expected = {
        s.byteSize(), rowSum.multiply(big(rows)).longValue(), weighted.longValue(), 0xAB + 0xCD, 2
      };
      assertArrayEquals(expected, ShardDigest.scalars(s));
      byte[] copy = s.toArray(ValueLayout.JAVA_BYTE);
      assertEquals(ReferenceDigest.digest(copy), ShardDigest.digest(s));
      assertEquals(ShardDigest.hashScalars(expected), ShardDigest.digest(s, 3));
    }
  }

  private static long pick(Random random, long[] edge) {
    return random.nextInt(3) == 0 ? edge[random.nextInt(edge.length)] : random.nextLong();
  }

  private static BigInteger big(long v) {
    return BigInteger.valueOf(v);
  }

  private static String digest(byte[] bytes) {
    return ShardDigest.digest(MemorySegment.ofArray(bytes));
  }
}
