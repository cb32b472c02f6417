package dev.mx.plan.view;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.OpSpec;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StridedViewTest {

  private static StridedView replay(Shape g, OpSpec... ops) {
    return StridedView.replay(g, List.of(ops));
  }

  private static OpSpec op(String name, Object... args) {
    return OpSpec.of(name, args);
  }

  private static List<Object> slice(Long start, Long stop) {
    return Arrays.asList(start, stop);
  }

  private static void assertView(StridedView v, long offset, long[] shape, long[] strides) {
    assertEquals(offset, v.offset(), v.toString());
    assertArrayEquals(shape, v.shape(), v.toString());
    assertArrayEquals(strides, v.strides(), v.toString());
  }

  @Test
  void rootIsRowMajorAtOffsetZero() {
    StridedView v = StridedView.root(Shape.of(4, 8));
    assertView(v, 0, new long[] {4, 8}, new long[] {8, 1});
    assertTrue(v.isPureView());
    assertTrue(v.isContiguous());
    assertEquals(v, replay(Shape.of(4, 8)));
  }

  @Test
  void narrowMovesTheOffsetAndKeepsStrides() {
    StridedView cols = replay(Shape.of(4, 8), OpSpec.narrow(1, 4, 4));
    assertView(cols, 4, new long[] {4, 4}, new long[] {8, 1});
    assertFalse(cols.isContiguous());
    StridedView rows = replay(Shape.of(4, 8), OpSpec.narrow(0, 2, 2));
    assertView(rows, 16, new long[] {2, 8}, new long[] {8, 1});
    assertTrue(rows.isContiguous());
    // negative start counts from the end; keyword arguments work too
    assertView(
        replay(Shape.of(4, 8), op("narrow", 1L, -2L, 2L)), 6, new long[] {4, 2}, new long[] {8, 1});
    assertView(
        StridedView.replay(
            Shape.of(4, 8),
            List.of(new OpSpec("narrow", List.of(), Map.of("dim", 0L, "start", 1L, "length", 3L)))),
        8,
        new long[] {3, 8},
        new long[] {8, 1});
  }

  @Test
  void getitemHandlesIndicesSlicesStepsAndEllipsis() {
    assertView(
        replay(Shape.of(8, 4), op("getitem", slice(0L, 4L))),
        0,
        new long[] {4, 4},
        new long[] {4, 1});
    assertView(replay(Shape.of(4, 8), op("__getitem__", 1L)), 8, new long[] {8}, new long[] {1});
    assertView(replay(Shape.of(4, 8), op("getitem", -1L)), 24, new long[] {8}, new long[] {1});
    assertView(
        replay(Shape.of(4, 8), op("getitem", "...", Arrays.asList(null, null, 2L))),
        0,
        new long[] {4, 4},
        new long[] {8, 2});
    assertView(
        replay(Shape.of(4, 8), op("getitem", Arrays.asList(1L, null, 2L), 3L)),
        11,
        new long[] {2},
        new long[] {16});
    // a single list holding items is a tuple key: x[1, 0:2]
    assertView(
        replay(Shape.of(4, 8), op("getitem", List.of(1L, slice(0L, 2L)))),
        8,
        new long[] {2},
        new long[] {1});
    // open and out-of-range slice bounds clamp like Python
    assertView(
        replay(Shape.of(4, 8), op("getitem", slice(-2L, 100L))),
        16,
        new long[] {2, 8},
        new long[] {8, 1});
    // None inserts a dim
    assertView(
        replay(Shape.of(4, 8), op("getitem", (Object) null)),
        0,
        new long[] {1, 4, 8},
        new long[] {32, 8, 1});
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("getitem", 4L)));
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("getitem", 0L, 0L, 0L)));
    assertThrows(
        UnsupportedReshardException.class,
        () -> replay(Shape.of(4, 8), op("getitem", Arrays.asList(0L, 4L, 0L))));
  }

  @Test
  void transposeTPermuteSwapShapeAndStrides() {
    long[] shape = {8, 4};
    long[] strides = {1, 8};
    assertView(replay(Shape.of(4, 8), op("transpose", 0L, 1L)), 0, shape, strides);
    assertView(replay(Shape.of(4, 8), op("t")), 0, shape, strides);
    assertView(replay(Shape.of(4, 8), op("permute", 1L, 0L)), 0, shape, strides);
    assertView(replay(Shape.of(4, 8), op("permute", List.of(-1L, 0L))), 0, shape, strides);
    assertView(
        replay(Shape.of(2, 3, 4), op("permute", 2L, 0L, 1L)),
        0,
        new long[] {4, 2, 3},
        new long[] {1, 12, 4});
    assertThrows(UnsupportedReshardException.class, () -> replay(Shape.of(2, 3, 4), op("t")));
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(2, 3), op("permute", 0L, 0L)));
  }

  @Test
  void transposeThenContiguousIsACopyEvenThoughStridesLookUntouched() {
    // The trap MX pins: on a square tensor the copy's strides equal the source's, so only tracking
    // the
    // materialization catches it. The logical mapping to the root survives (strides 1, 4).
    StridedView v = replay(Shape.of(4, 4), op("transpose", 0L, 1L), op("contiguous"));
    assertTrue(v.materialized());
    assertEquals("contiguous()", v.materializedBy());
    assertTrue(v.isRootView());
    assertView(v, 0, new long[] {4, 4}, new long[] {1, 4});
  }

  @Test
  void contiguousOnAContiguousViewIsNoCopy() {
    StridedView v = replay(Shape.of(4, 8), OpSpec.narrow(0, 1, 2), op("contiguous"));
    assertTrue(v.isPureView());
    assertNull(v.materializedBy());
    assertView(v, 8, new long[] {2, 8}, new long[] {8, 1});
  }

  @Test
  void viewsSplitAndMergeCompatibleDims() {
    assertView(
        replay(Shape.of(4, 8), op("view", 2L, 2L, 8L)),
        0,
        new long[] {2, 2, 8},
        new long[] {16, 8, 1});
    assertView(
        replay(Shape.of(4, 8), op("view", List.of(-1L))), 0, new long[] {32}, new long[] {1});
    assertView(replay(Shape.of(2, 3, 4), op("flatten")), 0, new long[] {24}, new long[] {1});
    assertView(
        replay(Shape.of(2, 3, 4), op("flatten", 1L)), 0, new long[] {2, 12}, new long[] {12, 1});
    assertView(
        replay(Shape.of(2, 3, 4), op("flatten", 0L, 1L)), 0, new long[] {6, 4}, new long[] {4, 1});
    // splitting a dim of a column slice stays a view; merging rows of it does not
    assertView(
        replay(Shape.of(4, 8), OpSpec.narrow(1, 0, 4), op("reshape", 4L, 2L, 2L)),
        0,
        new long[] {4, 2, 2},
        new long[] {8, 2, 1});
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> replay(Shape.of(4, 8), OpSpec.narrow(1, 0, 4), op("view", -1L)));
    assertTrue(e.getMessage().contains("view(-1)"), e.getMessage());
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("view", 5L, -1L)));
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("view", -1L, -1L)));
  }

  @Test
  void nonViewableReshapeMaterializesAndLosesTheRootMapping() {
    StridedView v = replay(Shape.of(4, 8), OpSpec.narrow(1, 0, 4), op("reshape", -1L));
    assertTrue(v.materialized());
    assertFalse(v.isRootView());
    assertArrayEquals(new long[] {16}, v.shape());
    UnsupportedReshardException e = assertThrows(UnsupportedReshardException.class, v::strides);
    assertTrue(e.getMessage().contains("reshape(-1)"), e.getMessage());
    // after a copy, view is judged against the copy: legal in PyTorch, but no strided view of the
    // root
    StridedView w = replay(Shape.of(3, 4), op("t"), op("contiguous"), op("view", -1L));
    assertEquals("contiguous()", w.materializedBy());
    assertFalse(w.isRootView());
  }

  @Test
  void unsqueezeUnbindIndexCancels() {
    StridedView v =
        replay(Shape.of(6, 4), op("unsqueeze", 0L), op("unbind"), op("__getitem__", 0L));
    assertTrue(v.isPureView());
    assertView(v, 0, new long[] {6, 4}, new long[] {4, 1});
    assertView(
        replay(Shape.of(6, 4), op("unsqueeze", 2L)), 0, new long[] {6, 4, 1}, new long[] {4, 1, 1});
    assertView(
        replay(Shape.of(6, 4), op("unsqueeze", 1L)), 0, new long[] {6, 1, 4}, new long[] {4, 4, 1});
    assertView(
        replay(Shape.of(3, 6, 4), op("unbind", 0L), op("getitem", 2L)),
        48,
        new long[] {6, 4},
        new long[] {4, 1});
    assertView(
        replay(Shape.of(3, 6, 4), op("unbind", 1L), op("getitem", -1L)),
        20,
        new long[] {3, 4},
        new long[] {24, 1});
  }

  @Test
  void chunkSplitsLikePyTorch() {
    assertView(
        replay(Shape.of(6, 4), op("chunk", 2L), op("getitem", 1L)),
        12,
        new long[] {3, 4},
        new long[] {4, 1});
    assertView(
        replay(Shape.of(6, 4), op("chunk", 2L, 1L), op("getitem", 1L)),
        2,
        new long[] {6, 2},
        new long[] {4, 1});
    // 7 rows in 3 chunks: 3, 3, 1
    assertView(
        replay(Shape.of(7, 2), op("chunk", 3L), op("getitem", 2L)),
        12,
        new long[] {1, 2},
        new long[] {2, 1});
    // 6 rows in 4 chunks: split size 2, so only 3 chunks exist
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> replay(Shape.of(6, 2), op("chunk", 4L), op("getitem", 3L)));
    assertTrue(e.getMessage().contains("3 views"), e.getMessage());
  }

  @Test
  void tuplesMustBeIndexed() {
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> StridedView.replay(Shape.of(6, 4), List.of(op("chunk", 2L)), "w"));
    assertTrue(e.getMessage().contains("not a tensor"), e.getMessage());
    assertEquals("w", e.source());
    assertThrows(
        UnsupportedReshardException.class,
        () -> replay(Shape.of(6, 4), op("unbind"), op("narrow", 0L, 0L, 1L)));
    assertThrows(
        UnsupportedReshardException.class,
        () -> replay(Shape.of(6, 4), op("unbind"), op("getitem", slice(0L, 2L))));
  }

  @Test
  void squeezeDropsSizeOneDims() {
    assertView(replay(Shape.of(1, 4, 1), op("squeeze")), 0, new long[] {4}, new long[] {1});
    assertView(
        replay(Shape.of(1, 4, 1), op("squeeze", 0L)), 0, new long[] {4, 1}, new long[] {1, 1});
    assertView(
        replay(Shape.of(1, 4, 1), op("squeeze", 1L)),
        0,
        new long[] {1, 4, 1},
        new long[] {4, 1, 1});
    assertView(
        replay(Shape.of(1, 4, 1), op("squeeze", List.of(0L, 2L))),
        0,
        new long[] {4},
        new long[] {1});
  }

  @Test
  void unknownOpsAndBadArgumentsNameTheOp() {
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> StridedView.replay(Shape.of(4, 8), List.of(op("expand", 2L, 4L, 8L)), "model.w"));
    assertTrue(e.getMessage().contains("'expand'"), e.getMessage());
    assertTrue(e.getMessage().contains("model.w"), e.getMessage());
    e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> replay(Shape.of(4, 8), OpSpec.narrow(1, 6, 4)));
    assertTrue(e.getMessage().contains("narrow(1, 6, 4)"), e.getMessage());
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), OpSpec.narrow(2, 0, 1)));
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("narrow", 0L, "a", 1L)));
    assertThrows(
        UnsupportedReshardException.class, () -> replay(Shape.of(4, 8), op("narrow", 0L, 1L)));
  }
}
