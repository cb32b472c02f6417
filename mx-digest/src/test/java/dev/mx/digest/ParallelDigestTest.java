package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.Test;

/** The multi-threaded split gives the single-threaded result for every split. */
class ParallelDigestTest {
  private static final int ROW = ShardDigest.ROW_BYTES;

  @Test
  void everySplitOfNineRowsCombinesToTheWhole() {
    int rows = 9;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment s = TestBytes.randomNative(arena, (long) rows * ROW, 7);
      RowKernel kernel = RowKernels.vectorIfAvailable();
      RowSums whole = kernel.sumRows(s, 0, rows);
      // Each subset of the 8 inner row boundaries is one split into contiguous ranges.
      for (int cuts = 0; cuts < 1 << (rows - 1); cuts++) {
        RowSums combined = RowSums.EMPTY;
        int start = 0;
        for (int boundary = 1; boundary <= rows; boundary++) {
          if (boundary == rows || (cuts & (1 << (boundary - 1))) != 0) {
            combined = combined.followedBy(kernel.sumRows(s, (long) start * ROW, boundary - start));
            start = boundary;
          }
        }
        assertEquals(whole, combined, "split mask " + Integer.toBinaryString(cuts));
      }
    }
  }

  @Test
  void everyTaskCountOnAnExecutorEqualsOneThread() {
    try (Arena arena = Arena.ofShared();
        ExecutorService pool = Executors.newFixedThreadPool(4)) {
      MemorySegment s = TestBytes.randomNative(arena, 13L * ROW + 7, 8).asSlice(0);
      MemorySegment misaligned =
          TestBytes.nativeCopy(arena, s.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE), 5);
      String expected = ShardDigest.digest(s);
      for (int tasks = 1; tasks <= 16; tasks++) {
        assertEquals(expected, ShardDigest.digest(s, pool, tasks), tasks + " tasks");
        assertEquals(
            expected, ShardDigest.digest(misaligned, pool, tasks), tasks + " tasks, misaligned");
      }
    }
  }

  @Test
  void everyThreadCountEqualsOneThreadOnALargeBuffer() {
    try (Arena arena = Arena.ofShared()) {
      MemorySegment s = TestBytes.randomNative(arena, 8L * 1024 * 1024 + 4 * 1000 + 3, 9);
      String expected = ShardDigest.digest(s);
      for (int threads = 0; threads <= 6; threads++) {
        assertEquals(expected, ShardDigest.digest(s, threads), threads + " threads");
      }
      assertThrows(IllegalArgumentException.class, () -> ShardDigest.digest(s, -1));
    }
  }

  @Test
  void aConfinedSegmentIsDigestedOnTheCallingThread() {
    try (Arena arena = Arena.ofConfined();
        ExecutorService pool = Executors.newFixedThreadPool(2)) {
      MemorySegment s = TestBytes.randomNative(arena, 40L * ROW + 1, 10);
      assertEquals(ShardDigest.digest(s), ShardDigest.digest(s, pool, 8));
      assertEquals(ShardDigest.digest(s), ShardDigest.digest(s, 4));
    }
  }

  @Test
  void streamingPiecesWithAnExecutorEqualTheWhole() {
    try (Arena arena = Arena.ofShared();
        ExecutorService pool = Executors.newFixedThreadPool(3)) {
      MemorySegment s = TestBytes.randomNative(arena, 50L * ROW + 9, 11);
      StreamingDigest pieces = new StreamingDigest();
      long[] cuts = {0, 3, 4097, 4100, 9 * ROW + 1, 30 * ROW, s.byteSize()};
      for (int i = 1; i < cuts.length; i++) {
        pieces.update(s.asSlice(cuts[i - 1], cuts[i] - cuts[i - 1]), pool, 3);
      }
      assertEquals(ShardDigest.digest(s), pieces.digest());
    }
  }
}
