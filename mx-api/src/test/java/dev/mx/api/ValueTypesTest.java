package dev.mx.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.Shard;
import java.util.List;
import org.junit.jupiter.api.Test;

class ValueTypesTest {

  @Test
  void dtypeLabelsParseInEverySpelling() {
    for (String l : List.of("torch.bfloat16", "bfloat16", "bf16", "BF16")) {
      assertEquals(DType.BF16, DType.parse(l), l);
    }
    assertEquals(DType.F32, DType.parse("torch.float32"));
    assertEquals(DType.F8_E4M3FN, DType.parse("F8_E4M3"));
    assertEquals(2, DType.F16.elementSize());
    assertEquals("torch.float8_e5m2", DType.F8_E5M2.torchLabel());
  }

  @Test
  void unknownDtypeNamesTheLabelAndListsTheKnownOnes() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> DType.parse("torch.complex64"));
    assertTrue(e.getMessage().contains("'torch.complex64'"), e.getMessage());
    assertTrue(e.getMessage().contains("bf16"), e.getMessage());
  }

  @Test
  void shapesCountElementsAndCatchOverflow() {
    assertEquals(24, Shape.of(2, 3, 4).numel());
    assertEquals(1, Shape.of(new long[0]).numel());
    assertEquals(
        List.of(12L, 4L, 1L),
        java.util.Arrays.stream(Shape.of(2, 3, 4).rowMajorStrides()).boxed().toList());
    assertThrows(ArithmeticException.class, () -> Shape.of(1L << 40, 1L << 40).numel());
    // The outermost extent is in no stride: strides that fit are returned even when the numel
    // would not (issue 23).
    assertEquals(
        List.of(8L, 1L),
        java.util.Arrays.stream(Shape.of(1L << 62, 8).rowMajorStrides()).boxed().toList());
    assertThrows(ArithmeticException.class, () -> Shape.of(2, 1L << 62, 8).rowMajorStrides());
    assertThrows(IllegalArgumentException.class, () -> Shape.of(2, -1));
    assertEquals(Shape.of(2, 3), Shape.of(2L, 3L));
  }

  @Test
  void boxesIntersectHalfOpen() {
    Box a = Box.at(new long[] {0, 0}, Shape.of(4, 8));
    Box b = Box.at(new long[] {2, 4}, Shape.of(4, 8));
    assertEquals(new Box(new long[] {2, 4}, new long[] {4, 8}), a.intersect(b));
    assertNull(
        a.intersect(Box.at(new long[] {4, 0}, Shape.of(1, 1))), "touching boxes are disjoint");
    assertThrows(IllegalArgumentException.class, () -> a.intersect(Box.whole(Shape.of(3))));
  }

  @Test
  void recordsValidateAndNameTheTensor() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> new Shard(new long[] {0}, Shape.of(2, 2), "trainer-3", 4096, 4, null));
    assertTrue(
        e.getMessage().contains("trainer-3") && e.getMessage().contains("rank"), e.getMessage());
    IllegalArgumentException c =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                new RecordedCopy(
                    "w", List.of(), "p", 0, Shape.of(2, 2), new long[] {1}, DType.F32));
    assertTrue(c.getMessage().contains("'w'") && c.getMessage().contains("'p'"), c.getMessage());
  }
}
