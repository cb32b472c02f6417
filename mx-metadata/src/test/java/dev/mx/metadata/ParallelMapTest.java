package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class ParallelMapTest {

  @Test
  void resultsComeInTheItemsOrderNullsIncluded() {
    List<Integer> items = IntStream.range(0, 300).boxed().toList();
    List<String> out = ParallelMap.inOrder(items, i -> i % 7 == 0 ? null : "item-" + i);
    assertEquals(300, out.size());
    for (int i = 0; i < 300; i++) {
      assertEquals(i % 7 == 0 ? null : "item-" + i, out.get(i), "result " + i);
    }
    assertEquals(List.of(), ParallelMap.inOrder(List.<Integer>of(), i -> i));
    assertEquals(Arrays.asList((Object) null), ParallelMap.inOrder(List.of(1), i -> null));
  }

  /** Two items wait for each other: on one thread at a time this would never end. */
  @Test
  void itemsRunAtTheSameTime() {
    CountDownLatch both = new CountDownLatch(2);
    List<Boolean> met =
        ParallelMap.inOrder(
            List.of("a", "b"),
            item -> {
              both.countDown();
              try {
                return both.await(60, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                throw new IllegalStateException(e);
              }
            });
    assertEquals(List.of(true, true), met);
  }

  /**
   * When several items fail, the earliest in list order is what the caller sees, however the
   * threads were scheduled, and every item has ended by the time the call returns.
   */
  @Test
  void theEarliestFailureInListOrderIsRethrownAsThrownAfterEveryItemEnded() {
    // Item 5 fails only once item 9 has failed, so the later failure always happens first.
    CountDownLatch laterFailed = new CountDownLatch(1);
    AtomicInteger ended = new AtomicInteger();
    List<IllegalArgumentException> thrown = new ArrayList<>();
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ParallelMap.inOrder(
                    IntStream.range(0, 12).boxed().toList(),
                    i -> {
                      try {
                        if (i == 9) {
                          IllegalArgumentException x = new IllegalArgumentException("table 9");
                          synchronized (thrown) {
                            thrown.add(x);
                          }
                          laterFailed.countDown();
                          throw x;
                        }
                        if (i == 5) {
                          assertTrue(laterFailed.await(60, TimeUnit.SECONDS));
                          IllegalArgumentException x = new IllegalArgumentException("table 5");
                          synchronized (thrown) {
                            thrown.add(x);
                          }
                          throw x;
                        }
                        return i;
                      } catch (InterruptedException ie) {
                        throw new IllegalStateException(ie);
                      } finally {
                        ended.incrementAndGet();
                      }
                    }));
    assertEquals("table 5", e.getMessage());
    assertSame(thrown.get(1), e, "the very exception the item threw");
    assertEquals(12, ended.get());
  }
}
