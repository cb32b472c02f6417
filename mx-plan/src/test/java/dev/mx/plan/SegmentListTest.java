package dev.mx.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.transport.ReadDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SegmentListTest {

  @Test
  void columnsRoundTripEverySegmentInOrder() {
    List<PullSegment> plain = new ArrayList<>();
    SegmentList.Builder b = new SegmentList.Builder(1);
    for (int i = 0; i < 100; i++) {
      PullSegment s = new PullSegment("s" + (i % 3), 1000L + i, "p" + (i / 40), 16L * i, 16);
      plain.add(s);
      b.add(s.session(), s.srcAddr(), s.paramName(), s.dstByte(), s.nbytes());
    }
    SegmentList list = b.build();
    assertEquals(plain, list);
    assertEquals(plain.hashCode(), list.hashCode());
    assertEquals("s1", list.session(4));
    assertEquals("p2", list.paramName(99));
    assertEquals(1600, list.totalBytes());
    assertSame(list, SegmentList.copyOf(list));
    assertEquals(plain, SegmentList.copyOf(plain));
    assertThrows(IndexOutOfBoundsException.class, () -> list.get(100));
    assertThrows(UnsupportedOperationException.class, () -> list.add(plain.get(0)));
    assertThrows(
        IllegalArgumentException.class, () -> new SegmentList.Builder(1).add("s", 0, "p", -1, 1));
  }

  @Test
  void descriptorsAddTheBaseOfEachDestinationOnce() {
    SegmentList list =
        new SegmentList.Builder(4)
            .add("a", 10, "p", 0, 4)
            .add("b", 20, "q", 8, 4)
            .add("a", 30, "p", 4, 4)
            .build();
    Map<String, Long> bases = Map.of("p", 5000L, "q", 9000L);
    List<String> asked = new ArrayList<>();
    List<ReadDescriptor> d =
        list.toDescriptors(
            n -> {
              asked.add(n);
              return bases.get(n);
            });
    assertEquals(
        List.of(
            new ReadDescriptor("a", 10, 5000, 4),
            new ReadDescriptor("b", 20, 9008, 4),
            new ReadDescriptor("a", 30, 5004, 4)),
        d);
    assertEquals(List.of("p", "q"), asked);
    assertThrows(IndexOutOfBoundsException.class, () -> d.get(3));
  }

  @Test
  void transferPlanKeepsASegmentListAndSumsItsBytes() {
    SegmentList list =
        new SegmentList.Builder(2).add("a", 10, "p", 0, 4).add("a", 14, "p", 4, 8).build();
    TransferPlan plan =
        new TransferPlan(list, List.of(), List.of(), List.of(), List.of(), 2, 12, Map.of());
    assertSame(list, plan.segments());
    assertEquals(12, plan.bytesPlanned());
    assertEquals(2, plan.descriptorCount());
  }
}
