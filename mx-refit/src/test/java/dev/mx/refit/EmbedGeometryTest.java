package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.refit.embed.TargetGeometry;
import dev.mx.refit.embed.TargetGeometry.Part;
import dev.mx.refit.embed.TpShard;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The embedding helpers record exactly the copies a loader would, and name what does not fit. */
class EmbedGeometryTest {

  @Test
  void tpShardOffsetsShapesAndNarrow() {
    TpShard s = TpShard.of(Shape.of(8, 6), 1, 2, 3);
    assertArrayEquals(new long[] {0, 4}, s.offset());
    assertEquals(Shape.of(8, 2), s.shape());
    assertEquals(OpSpec.narrow(1, 4, 2), s.narrow());
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> TpShard.of(Shape.of(8, 6), 1, 0, 4));
    assertTrue(e.getMessage().contains("TP 4 does not divide dim 1 (6)"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> TpShard.of(Shape.of(8), 0, 2, 2));
  }

  @Test
  void tpShardCopyTakesTheShardOutOfTheGlobalTensor() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment global = arena.allocate(4 * 6 * 4);
      for (int i = 0; i < 24; i++) {
        global.setAtIndex(ValueLayout.JAVA_INT, i, i);
      }
      TpShard s = TpShard.of(Shape.of(4, 6), 1, 1, 3);
      MemorySegment shard = arena.allocate(4 * 2 * 4);
      s.copy(global, shard, 4);
      assertArrayEquals(
          new int[] {2, 3, 8, 9, 14, 15, 20, 21}, shard.toArray(ValueLayout.JAVA_INT));
    }
  }

  @Test
  void fusedQkvRecordsOneCopyPerPartAtConsecutiveOffsets() {
    TargetGeometry g =
        TargetGeometry.builder()
            .fused(
                "qkv",
                DType.BF16,
                Part.of("q", TpShard.of(Shape.of(8, 4), 0, 1, 2)),
                Part.of("k", TpShard.of(Shape.of(4, 4), 0, 1, 2)),
                Part.of("v", TpShard.of(Shape.of(4, 4), 0, 1, 2)))
            .build();
    assertEquals(Shape.of(8, 4), g.params().get("qkv").shape());
    Capture c =
        g.capture(
            List.of(
                new ManifestEntry("q", DType.BF16, Shape.of(8, 4)),
                new ManifestEntry("k", DType.BF16, Shape.of(4, 4)),
                new ManifestEntry("v", DType.BF16, Shape.of(4, 4))));
    List<RecordedCopy> copies = c.result().copies();
    assertEquals(List.of(0L, 16L, 24L), copies.stream().map(RecordedCopy::destOffset).toList());
    assertEquals(List.of(OpSpec.narrow(0, 4, 4)), copies.get(0).opChain());
  }

  @Test
  void aSourceNoPublisherOffersIsUnsupportedNamingIt() {
    TargetGeometry g =
        TargetGeometry.builder().whole("norm", "norm.weight", Shape.of(4), DType.F32).build();
    Capture c = g.capture(List.of(new ManifestEntry("other", DType.F32, Shape.of(4))));
    assertEquals(List.of("norm.weight"), c.result().unsupported());
    assertTrue(c.result().unsupportedReasons().get("norm.weight").contains("needed by 'norm'"));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            TargetGeometry.builder()
                .whole("p", "a", Shape.of(2), DType.F32)
                .whole("p", "b", Shape.of(2), DType.F32));
  }
}
