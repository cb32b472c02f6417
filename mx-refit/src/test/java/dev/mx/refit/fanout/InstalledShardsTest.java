package dev.mx.refit.fanout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Reading a geometry capture backwards into the shards installed weights hold. */
class InstalledShardsTest {
  private static final List<ManifestEntry> MANIFEST =
      List.of(
          new ManifestEntry("q", DType.BF16, Shape.of(8, 6)),
          new ManifestEntry("k", DType.BF16, Shape.of(4, 6)),
          new ManifestEntry("o", DType.BF16, Shape.of(6, 8)),
          new ManifestEntry("norm", DType.BF16, Shape.of(6)));

  private static Capture capture(Map<String, ParamSpec> layout, RecordedCopy... copies) {
    return new Capture(CaptureResult.of(List.of(copies)), layout);
  }

  @Test
  void aTensorParallelRankServesTheRowsOfItsFusedParameterAndItsColumnSliceAsBoxes() {
    // Rank 1 of tp=2: qkv = [q rows 4..8; k rows 2..4] (6x6, f32), o = columns 4..8 (6x4), norm
    // whole.
    Capture c =
        capture(
            Map.of(
                "qkv", new ParamSpec(Shape.of(6, 6), DType.F32),
                "o_proj", new ParamSpec(Shape.of(6, 4), DType.F32),
                "norm", new ParamSpec(Shape.of(6), DType.F32)),
            new RecordedCopy(
                "q",
                List.of(OpSpec.narrow(0, 4, 4)),
                "qkv",
                0,
                Shape.of(4, 6),
                new long[] {6, 1},
                DType.F32),
            new RecordedCopy(
                "k",
                List.of(OpSpec.narrow(0, 2, 2)),
                "qkv",
                24,
                Shape.of(2, 6),
                new long[] {6, 1},
                DType.F32),
            new RecordedCopy(
                "o",
                List.of(OpSpec.narrow(1, 4, 4)),
                "o_proj",
                0,
                Shape.of(6, 4),
                new long[] {4, 1},
                DType.F32),
            new RecordedCopy("norm", List.of(), "norm", 0, Shape.of(6), new long[] {1}, DType.F32));
    List<InstalledShards.Entry> shards = InstalledShards.of(c, MANIFEST);
    assertEquals(4, shards.size());
    InstalledShards.Entry q = shards.get(0);
    assertEquals("q", q.name());
    assertEquals(DType.F32, q.dtype(), "served in the installed dtype");
    assertEquals(Shape.of(8, 6), q.globalShape());
    assertArrayEquals(new long[] {4, 0}, q.shardOffset());
    assertEquals(Shape.of(4, 6), q.shape());
    assertEquals(0, q.byteOffset());
    InstalledShards.Entry k = shards.get(1);
    assertArrayEquals(new long[] {2, 0}, k.shardOffset());
    assertEquals(24 * 4, k.byteOffset(), "k's rows follow q's in the fused parameter");
    assertEquals(2 * 6 * 4, k.byteSize());
    InstalledShards.Entry o = shards.get(2);
    assertArrayEquals(new long[] {0, 4}, o.shardOffset());
    assertEquals(Shape.of(6, 4), o.shape());
    assertArrayEquals(new long[] {0}, shards.get(3).shardOffset());
    assertEquals(Shape.of(6), shards.get(3).shape());
  }

  @Test
  void aBoxInstalledTwiceIsServedOnce() {
    RecordedCopy first =
        new RecordedCopy("norm", List.of(), "a", 0, Shape.of(6), new long[] {1}, DType.BF16);
    RecordedCopy second =
        new RecordedCopy("norm", List.of(), "b", 0, Shape.of(6), new long[] {1}, DType.BF16);
    Map<String, ParamSpec> layout =
        Map.of(
            "a", new ParamSpec(Shape.of(6), DType.BF16),
            "b", new ParamSpec(Shape.of(6), DType.BF16));
    List<InstalledShards.Entry> shards =
        InstalledShards.of(capture(layout, first, second), MANIFEST);
    assertEquals(1, shards.size());
    assertEquals("a", shards.get(0).param());
  }

  @Test
  void aTransposedCopyIsRefusedNamingTheParameterAndSource() {
    RecordedCopy t =
        new RecordedCopy(
            "o", List.of(OpSpec.of("t")), "o_t", 0, Shape.of(8, 6), new long[] {6, 1}, DType.BF16);
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () ->
                InstalledShards.of(
                    capture(Map.of("o_t", new ParamSpec(Shape.of(8, 6), DType.BF16)), t),
                    MANIFEST));
    assertTrue(e.getMessage().contains("parameter 'o_t'"), e.getMessage());
    assertTrue(e.getMessage().contains("'o'"), e.getMessage());
    assertTrue(e.getMessage().contains("not a box"), e.getMessage());
  }

  @Test
  void aCopyScatteredIntoItsParameterIsRefused() {
    // q rows 0..2 written into every other row of a 4x6 parameter.
    RecordedCopy strided =
        new RecordedCopy(
            "q",
            List.of(OpSpec.narrow(0, 0, 2)),
            "p",
            0,
            Shape.of(2, 6),
            new long[] {12, 1},
            DType.BF16);
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () ->
                InstalledShards.of(
                    capture(Map.of("p", new ParamSpec(Shape.of(4, 6), DType.BF16)), strided),
                    MANIFEST));
    assertTrue(e.getMessage().contains("not one contiguous run"), e.getMessage());
  }

  @Test
  void aSourceInstalledInTwoDtypesIsRefused() {
    RecordedCopy a =
        new RecordedCopy("norm", List.of(), "a", 0, Shape.of(6), new long[] {1}, DType.BF16);
    RecordedCopy b =
        new RecordedCopy(
            "norm",
            List.of(OpSpec.narrow(0, 0, 3)),
            "b",
            0,
            Shape.of(3),
            new long[] {1},
            DType.F32);
    Map<String, ParamSpec> layout =
        Map.of(
            "a", new ParamSpec(Shape.of(6), DType.BF16),
            "b", new ParamSpec(Shape.of(3), DType.F32));
    UnsupportedReshardException e =
        assertThrows(
            UnsupportedReshardException.class,
            () -> InstalledShards.of(capture(layout, a, b), MANIFEST));
    assertTrue(e.getMessage().contains("installed as bf16 and as f32"), e.getMessage());
  }
}
