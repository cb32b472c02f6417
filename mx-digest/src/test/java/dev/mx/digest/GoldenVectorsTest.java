package dev.mx.digest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Every golden vector ModelExpress computed, through every way of feeding the digest. */
class GoldenVectorsTest {

  @Test
  void theTableHasEveryVectorOfTheSpec() {
    List<GoldenVectors.Vector> all = GoldenVectors.all();
    assertEquals(10, all.size(), all.toString());
    assertEquals("c804ce198ec337e3dc762bdd1a09aece", all.get(0).digest());
  }

  @TestFactory
  List<DynamicTest> everyVector() {
    return GoldenVectors.all().stream()
        .map(v -> DynamicTest.dynamicTest(v.name(), () -> check(v)))
        .toList();
  }

  private static void check(GoldenVectors.Vector v) {
    byte[] input = v.input();
    assertEquals(v.digest(), ReferenceDigest.digest(input), "slow reference, " + v.name());
    assertEquals(v.digest(), ShardDigest.digest(MemorySegment.ofArray(input)), "heap, " + v.name());
    try (Arena arena = Arena.ofShared();
        ExecutorService pool = Executors.newFixedThreadPool(3)) {
      for (int misalignment = 0; misalignment < 8; misalignment += 3) {
        MemorySegment off = TestBytes.nativeCopy(arena, input, misalignment);
        assertEquals(
            v.digest(), ShardDigest.digest(off), "native at +" + misalignment + ", " + v.name());
        assertEquals(v.digest(), ShardDigest.digest(off, 4), "4 threads, " + v.name());
        assertEquals(v.digest(), ShardDigest.digest(off, pool, 5), "5 tasks, " + v.name());
      }
      StreamingDigest pieces = new StreamingDigest();
      Random random = new Random(v.name().hashCode());
      MemorySegment all = MemorySegment.ofArray(input);
      for (long at = 0; at < input.length; ) {
        long n = Math.min(input.length - at, random.nextInt(9000));
        pieces.update(all.asSlice(at, n));
        at += n;
      }
      assertEquals(input.length, pieces.byteCount());
      assertEquals(v.digest(), pieces.digest(), "random pieces, " + v.name());
      assertTrue(v.digest().matches("[0-9a-f]{32}"));
    }
  }
}
