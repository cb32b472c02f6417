package dev.mx.api.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * {@link LandingFolds}: bound only around the work, only on its thread; a read with a fold goes
 * through it with exactly its bytes, one without is a plain copy.
 */
class LandingFoldsTest {

  @Test
  void foldsAreBoundOnlyAroundTheWorkAndOnlyOnItsThread() throws Exception {
    ReadDescriptor read = new ReadDescriptor("peer", 0, 0, 1);
    LandingFolds folds = LandingFolds.of(Map.of(read, (s, d) -> {}));
    assertSame(LandingFolds.NONE, LandingFolds.current());
    assertSame(LandingFolds.NONE, LandingFolds.of(Map.of()));
    List<Object> seen = new ArrayList<>();
    folds.during(
        () -> {
          seen.add(LandingFolds.current());
          // Another thread started inside does not inherit them: its copies stay plain.
          seen.add(CompletableFuture.supplyAsync(LandingFolds::current).join());
          return null;
        });
    assertEquals(List.of(folds, LandingFolds.NONE), seen);
    assertSame(LandingFolds.NONE, LandingFolds.current());
  }

  @Test
  void aReadWithAFoldGoesThroughItWithItsBytesAndOneWithoutIsAPlainCopy() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment src = arena.allocate(64);
      for (int i = 0; i < 64; i++) {
        src.set(ValueLayout.JAVA_BYTE, i, (byte) (i + 1));
      }
      MemorySegment dst = arena.allocate(64);
      ReadDescriptor folded = new ReadDescriptor("peer", src.address() + 8, dst.address(), 16);
      ReadDescriptor plain = new ReadDescriptor("peer", src.address() + 32, dst.address() + 32, 8);
      List<String> calls = new ArrayList<>();
      LandingFolds folds =
          LandingFolds.of(
              Map.of(
                  folded,
                  (s, d) -> {
                    calls.add(
                        s.byteSize() + " " + s.get(ValueLayout.JAVA_BYTE, 0) + " " + d.byteSize());
                    MemorySegment.copy(s, 0, d, 0, s.byteSize());
                  }));
      folds.copy(folded, src, 8, dst, 0);
      folds.copy(plain, src, 32, dst, 32);
      assertEquals(List.of("16 9 16"), calls);
      assertEquals(-1L, MemorySegment.mismatch(src, 8, 24, dst, 0, 16));
      assertEquals(-1L, MemorySegment.mismatch(src, 32, 40, dst, 32, 40));
      assertTrue(!folds.isEmpty() && LandingFolds.NONE.isEmpty());
    }
  }
}
