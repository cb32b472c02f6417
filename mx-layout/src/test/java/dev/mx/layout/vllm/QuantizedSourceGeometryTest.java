package dev.mx.layout.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.model.ScaleTiles;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Quantized sources pulled into vLLM's quantized parameters: codes as they are, scales re-sliced.
 */
class QuantizedSourceGeometryTest {
  private static final ScaleTiles BLOCKS_16 = new ScaleTiles("_scale_inv", DType.F32, 16, 16);
  private static final String QKV = "model.layers.0.self_attn.qkv_proj.weight";

  private static boolean linear(GlobalTensor t) {
    return t.shape().rank() >= 2 && Fp8BlockLayout.LINEAR_WEIGHTS.contains(t.role());
  }

  private static QuantizedSourceGeometry geometry(
      String model, int tp, int rank, ScaleTiles tiles, boolean partialBlocks) {
    VllmLayout layout =
        new VllmLayout(ModelConfigs.load(model), new InferenceTopology(tp, 1), rank, DType.BF16);
    Fp8BlockLayout.Scales scales =
        new Fp8BlockLayout.Scales(
            tiles.suffix(),
            tiles.dtype(),
            tiles.tileRows() == tiles.tileCols(),
            (w, members) ->
                tiles.tileRows() == tiles.tileCols()
                    ? Fp8BlockLayout.scaleShape(w, (int) tiles.tileRows(), members)
                    : tiles.scaleShape(w));
    return new QuantizedSourceGeometry(
        layout,
        Fp8BlockLayout.defaults(layout, (int) Math.max(1, tiles.tileRows()), partialBlocks, scales),
        tiles);
  }

  private static List<ManifestEntry> manifest(String model, ScaleTiles tiles) {
    return QuantizedSourceGeometry.manifest(
        ModelConfigs.load(model), DType.BF16, tiles, QuantizedSourceGeometryTest::linear);
  }

  private static RecordedCopy copyOf(Capture c, String source) {
    return c.result().copies().stream()
        .filter(r -> r.srcName().equals(source))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no copy of " + source));
  }

  @Test
  void codesKeepTheirCopiesAndScalesFollowEachMembersBlockRows() {
    QuantizedSourceGeometry g = geometry("tiny-qwen3-moe", 2, 1, BLOCKS_16, false);
    Capture c = g.capture(manifest("tiny-qwen3-moe", BLOCKS_16));
    assertEquals(List.of(), c.result().unsupported());
    // qkv_proj of rank 1: q rows 64 (4 block rows), k 16 (1), v 16 (1); 64 columns (4 blocks).
    assertEquals(Shape.of(6, 4), c.paramLayout().get(QKV + "_scale_inv").shape());
    assertEquals(DType.F8_E4M3FN, c.paramLayout().get(QKV).dtype());
    assertEquals(DType.F8_E4M3FN, copyOf(c, "model.layers.0.self_attn.k_proj.weight").destDtype());
    RecordedCopy q = copyOf(c, "model.layers.0.self_attn.q_proj.weight_scale_inv");
    assertEquals(List.of(OpSpec.narrow(0, 4, 4)), q.opChain());
    assertEquals(QKV + "_scale_inv", q.paramName());
    assertEquals(0, q.destOffset());
    assertEquals(Shape.of(4, 4), q.destShape());
    RecordedCopy k = copyOf(c, "model.layers.0.self_attn.k_proj.weight_scale_inv");
    assertEquals(List.of(OpSpec.narrow(0, 1, 1)), k.opChain());
    assertEquals(4 * 4, k.destOffset(), "after q's 4 block rows");
    assertEquals(Shape.of(1, 4), k.destShape());
    assertEquals(DType.F32, k.destDtype());
    // o_proj is row-parallel: rank 1 holds columns [64, 128), block columns [4, 8).
    RecordedCopy o = copyOf(c, "model.layers.0.self_attn.o_proj.weight_scale_inv");
    assertEquals(List.of(OpSpec.narrow(1, 4, 4)), o.opChain());
    assertEquals(Shape.of(4, 4), o.destShape());
    // Every engine parameter is written, scales included.
    Set<String> written = new TreeSet<>();
    c.result().copies().forEach(r -> written.add(r.paramName()));
    assertEquals(new TreeSet<>(c.paramLayout().keySet()), written);
  }

  @Test
  void perChannelScalesOfAColumnSliceAreItsWholeRows() {
    ScaleTiles channels = new ScaleTiles("_scale", DType.F32, 1, ScaleTiles.WHOLE);
    Capture c =
        geometry("tiny-llama", 2, 1, channels, true).capture(manifest("tiny-llama", channels));
    RecordedCopy o = copyOf(c, "model.layers.1.self_attn.o_proj.weight_scale");
    assertEquals(List.of(), o.opChain(), "every rank takes o_proj's scales whole");
    assertEquals(Shape.of(64, 1), o.destShape());
    RecordedCopy k = copyOf(c, "model.layers.1.self_attn.k_proj.weight_scale");
    // kv heads 2 over tp 2: rank 1 holds k rows [8, 16), after q's 32 rows of qkv_proj.
    assertEquals(List.of(OpSpec.narrow(0, 8, 8)), k.opChain());
    assertEquals(32, k.destOffset());
  }

  @Test
  void aSliceThatCutsATileOfItsSourceIsRefused() {
    // With partial blocks per member the engine takes 8 rows of k per rank: half a source block.
    LayoutException e =
        assertThrows(
            LayoutException.class,
            () ->
                geometry("tiny-llama", 2, 1, BLOCKS_16, true)
                    .capture(manifest("tiny-llama", BLOCKS_16)));
    assertTrue(e.getMessage().contains("'model.layers.0.self_attn.k_proj.weight'"), e.getMessage());
    assertTrue(e.getMessage().contains("rows [8, 16) of 16 cut a tile of 16 rows"), e.getMessage());
  }

  @Test
  void everyMismatchBetweenCodesAndScalesFailsClosedNamingTheTensor() {
    String k = "model.layers.0.self_attn.k_proj.weight";
    assertRefused(
        m -> without(m, k + "_scale_inv"),
        "'" + k + "' for inference rank 1: is offered without its scales '" + k + "_scale_inv'");
    assertRefused(
        m -> renamed(m, k + "_scale_inv", k + "_scale", DType.U8),
        "is offered without its scales '"
            + k
            + "_scale_inv'; it is offered with '"
            + k
            + "_scale' ("
            + DType.U8
            + " [2, 4]): the trainers publish another format than this receiver installs");
    assertRefused(
        m -> without(m, k),
        "'"
            + k
            + "' for inference rank 1: has its scales '"
            + k
            + "_scale_inv' offered but not the weight itself");
    assertRefused(
        m -> replace(m, new ManifestEntry(k + "_scale_inv", DType.BF16, Shape.of(2, 4))),
        "'"
            + k
            + "_scale_inv' for inference rank 1: is offered as "
            + DType.BF16
            + " of shape [2, 4]");
    assertRefused(
        m -> replace(m, new ManifestEntry(k + "_scale_inv", DType.F32, Shape.of(1, 4))),
        "of shape [1, 4], but the scales of "
            + k
            + " [32, 64] are "
            + DType.F32
            + " of shape [2, 4] (tiles of 16 x 16)");
    assertRefused(
        m -> replace(m, new ManifestEntry(k, DType.BF16, Shape.of(32, 64))),
        "a quantized source is float8_e4m3fn");
    assertRefused(
        m -> replace(m, new ManifestEntry("model.norm.weight", DType.F8_E4M3FN, Shape.of(64))),
        "'model.norm.weight' for inference rank 1: is offered as float8_e4m3fn, but the engine holds it unquantized");
    assertRefused(
        m -> {
          List<ManifestEntry> out = new ArrayList<>(m);
          out.add(new ManifestEntry("lm_head.weight_scale_inv", DType.F32, Shape.of(63, 4)));
          return out;
        },
        "'lm_head.weight_scale_inv' for inference rank 1: holds scales of a weight the engine does not quantize");
  }

  private static void assertRefused(UnaryOperator<List<ManifestEntry>> edit, String message) {
    QuantizedSourceGeometry g = geometry("tiny-qwen3-moe", 2, 1, BLOCKS_16, false);
    LayoutException e =
        assertThrows(
            LayoutException.class,
            () -> g.capture(edit.apply(manifest("tiny-qwen3-moe", BLOCKS_16))));
    assertTrue(e.getMessage().contains(message), e.getMessage());
  }

  private static List<ManifestEntry> without(List<ManifestEntry> m, String name) {
    return m.stream().filter(e -> !e.name().equals(name)).toList();
  }

  /** Entry {@code from} renamed to {@code to} in {@code dtype}: another format's scales. */
  private static List<ManifestEntry> renamed(
      List<ManifestEntry> m, String from, String to, DType dtype) {
    return m.stream()
        .map(e -> e.name().equals(from) ? new ManifestEntry(to, dtype, e.globalShape()) : e)
        .toList();
  }

  private static List<ManifestEntry> replace(List<ManifestEntry> m, ManifestEntry entry) {
    return m.stream().map(e -> e.name().equals(entry.name()) ? entry : e).toList();
  }

  @Test
  void theManifestOffersEveryLinearWeightQuantizedWithItsScales() {
    ModelArchitecture arch = ModelConfigs.load("tiny-qwen3-moe");
    List<ManifestEntry> m = manifest("tiny-qwen3-moe", BLOCKS_16);
    long linear = arch.tensors().stream().filter(QuantizedSourceGeometryTest::linear).count();
    assertEquals(arch.tensors().size() + linear, m.size());
    assertTrue(
        m.contains(
            new ManifestEntry(
                "model.layers.0.self_attn.k_proj.weight_scale_inv", DType.F32, Shape.of(2, 4))));
  }
}
