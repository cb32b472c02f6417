package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.digest.DigestParts;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * {@link PositionedDigest}: pieces cut at any byte, added in any order and from several threads,
 * give exactly {@link ShardDigest#digest} of the whole region (itself checked against the
 * reference's golden vectors), for region sizes around every boundary of the digest's scalars.
 */
class PositionedDigestTest {
  private static final long[] SIZES = {
    0, 1, 3, 4, 5, 4092, 4095, 4096, 4097, 4099, 8192, 3 * 4096 + 7, 5 * 4096 + 2048, (1 << 20) + 13
  };

  /** Cuts [0, size) at {@code cuts} random byte positions. */
  private static List<long[]> randomPieces(long size, int cuts, Random random) {
    List<Long> at = new ArrayList<>();
    at.add(0L);
    at.add(size);
    for (int i = 0; i < cuts && size > 1; i++) {
      at.add(1 + (long) (random.nextDouble() * (size - 1)));
    }
    Collections.sort(at);
    List<long[]> pieces = new ArrayList<>();
    for (int i = 0; i + 1 < at.size(); i++) {
      if (at.get(i + 1) > at.get(i) || size == 0) {
        pieces.add(new long[] {at.get(i), at.get(i + 1)});
      }
    }
    return pieces;
  }

  @Test
  void piecesInAnyOrderEqualTheWholeDigest() {
    Random random = new Random(22);
    try (Arena arena = Arena.ofConfined()) {
      for (long size : SIZES) {
        MemorySegment bytes = TestBytes.randomNative(arena, size, size * 31 + 7);
        String whole = ShardDigest.digest(bytes);
        for (int cuts : new int[] {0, 1, 2, 7, 40}) {
          List<long[]> pieces = randomPieces(size, cuts, random);
          Collections.shuffle(pieces, random);
          PositionedDigest parts = new PositionedDigest(size);
          int completions = 0;
          for (long[] p : pieces) {
            completions += parts.add(p[0], bytes.asSlice(p[0], p[1] - p[0])) ? 1 : 0;
          }
          assertEquals(size == 0 ? 0 : 1, completions, "exactly one add completes " + size);
          assertEquals(whole, parts.digest(), "size " + size + ", " + pieces.size() + " pieces");
        }
      }
    }
  }

  @Test
  void copiedPiecesEqualTheWholeDigestAndLandEveryByte() {
    Random random = new Random(37);
    try (Arena arena = Arena.ofConfined()) {
      for (long size : SIZES) {
        MemorySegment bytes = TestBytes.randomNative(arena, size, size * 17 + 3);
        String whole = ShardDigest.digest(bytes);
        for (int cuts : new int[] {0, 1, 3, 40}) {
          // Source and destination misaligned differently, so no piece starts on a vector edge.
          int srcShift = random.nextInt(8);
          int dstShift = random.nextInt(8);
          MemorySegment src =
              TestBytes.nativeCopy(arena, bytes.toArray(ValueLayout.JAVA_BYTE), srcShift);
          MemorySegment dst = arena.allocate(size + dstShift + 1, 64).asSlice(dstShift, size);
          List<long[]> pieces = randomPieces(size, cuts, random);
          Collections.shuffle(pieces, random);
          PositionedDigest parts = new PositionedDigest(size);
          int completions = 0;
          for (long[] p : pieces) {
            long n = p[1] - p[0];
            completions +=
                parts.copyAndAdd(p[0], src.asSlice(p[0], n), dst.asSlice(p[0], n)) ? 1 : 0;
          }
          String label = "size " + size + ", " + pieces.size() + " pieces";
          assertEquals(size == 0 ? 0 : 1, completions, label);
          assertEquals(whole, parts.digest(), label);
          assertEquals(-1L, bytes.mismatch(dst), "every byte copied, " + label);
        }
      }
    }
  }

  @Test
  void copyingAndAddingRefusesMismatchedSizesAndDoubledPieces() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment bytes = TestBytes.randomNative(arena, 100, 9);
      MemorySegment dst = arena.allocate(100);
      PositionedDigest parts = new PositionedDigest(100);
      IllegalArgumentException sizes =
          assertThrows(
              IllegalArgumentException.class,
              () -> parts.copyAndAdd(0, bytes.asSlice(0, 10), dst.asSlice(0, 9)));
      assertEquals(
          "copy of 10 bytes into a destination of 9 bytes at region offset 0", sizes.getMessage());
      assertTrue(parts.copyAndAdd(0, bytes, dst));
      assertEquals(ShardDigest.digest(bytes), parts.digest());
      IllegalArgumentException twice =
          assertThrows(
              IllegalArgumentException.class,
              () -> parts.copyAndAdd(4, bytes.asSlice(4, 4), dst.asSlice(4, 4)));
      assertTrue(twice.getMessage().contains("added twice"), twice.getMessage());
    }
  }

  @Test
  void theDefaultCopyAndAddOfAProviderThatOnlyAddsCopiesFirst() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment bytes = TestBytes.randomNative(arena, 4096 * 2 + 5, 4);
      MemorySegment dst = arena.allocate(bytes.byteSize());
      PositionedDigest real = new PositionedDigest(bytes.byteSize());
      // A test double with only add(): the interface's default copy-and-add must land the bytes.
      DigestParts addOnly =
          new DigestParts() {
            @Override
            public boolean add(long offset, MemorySegment piece) {
              return real.add(offset, piece);
            }

            @Override
            public String digest() {
              return real.digest();
            }
          };
      assertFalse(addOnly.copyAndAdd(0, bytes.asSlice(0, 4099), dst.asSlice(0, 4099)));
      assertTrue(
          addOnly.copyAndAdd(
              4099, bytes.asSlice(4099), dst.asSlice(4099, bytes.byteSize() - 4099)));
      assertEquals(-1L, bytes.mismatch(dst));
      assertEquals(ShardDigest.digest(bytes), addOnly.digest());
    }
  }

  @Test
  void extremeWordValuesAndSplitSignBytesCombineExactly() {
    try (Arena arena = Arena.ofConfined()) {
      long size = 2 * 4096 + 6;
      MemorySegment bytes = arena.allocate(size);
      for (long i = 0; i < size; i++) {
        // 0x80 and 0xFF top bytes exercise the sign of split words; 0x7F the largest positive.
        bytes.set(ValueLayout.JAVA_BYTE, i, (byte) (i % 3 == 0 ? 0x80 : i % 3 == 1 ? 0xFF : 0x7F));
      }
      PositionedDigest parts = new PositionedDigest(size);
      // Every piece boundary splits a word: odd offsets only.
      for (long a = 0; a < size; ) {
        long b = Math.min(size, a + 1 + (a % 7) * 613 + 2);
        parts.add(a, bytes.asSlice(a, b - a));
        a = b;
      }
      assertEquals(ShardDigest.digest(bytes), parts.digest());
    }
  }

  @Test
  void piecesAddedFromManyThreadsEqualTheWholeDigest() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try (Arena arena = Arena.ofShared()) {
      long size = 4L * (1 << 20) + 4093;
      MemorySegment bytes = TestBytes.randomNative(arena, size, 5);
      List<long[]> pieces = randomPieces(size, 300, new Random(3));
      PositionedDigest parts = new PositionedDigest(size);
      List<Future<Boolean>> done = new ArrayList<>();
      for (long[] p : pieces) {
        done.add(pool.submit(() -> parts.add(p[0], bytes.asSlice(p[0], p[1] - p[0]))));
      }
      int completions = 0;
      for (Future<Boolean> f : done) {
        completions += f.get() ? 1 : 0;
      }
      assertEquals(1, completions);
      assertEquals(ShardDigest.digest(bytes), parts.digest());
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void theCpuProviderCombinesPieces() {
    DigestParts parts = new CpuDigestProvider().parts(8).orElseThrow();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment bytes = TestBytes.randomNative(arena, 8, 1);
      assertFalse(parts.add(5, bytes.asSlice(5, 3)));
      assertTrue(parts.add(0, bytes.asSlice(0, 5)));
      assertEquals(ShardDigest.digest(bytes), parts.digest());
    }
  }

  @Test
  void missingOutsideAndDoubledPiecesAreRefused() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment bytes = TestBytes.randomNative(arena, 100, 9);
      PositionedDigest parts = new PositionedDigest(100);
      parts.add(0, bytes.asSlice(0, 60));
      IllegalStateException missing = assertThrows(IllegalStateException.class, parts::digest);
      assertEquals("40 of the region's 100 bytes were not added", missing.getMessage());
      IllegalArgumentException outside =
          assertThrows(IllegalArgumentException.class, () -> parts.add(90, bytes.asSlice(0, 20)));
      assertEquals("piece [90, 110) outside the region of 100 bytes", outside.getMessage());
      parts.add(60, bytes.asSlice(60, 40));
      IllegalArgumentException twice =
          assertThrows(IllegalArgumentException.class, () -> parts.add(0, bytes.asSlice(0, 1)));
      assertTrue(twice.getMessage().contains("added twice"), twice.getMessage());
    }
  }
}
