package dev.mx.layout.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Box;
import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.model.ScaleTiles;
import dev.mx.layout.vllm.Fp8BlockLayout;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/** A Megatron rank split into what it publishes as it holds it, its codes and its scales. */
class QuantizedShardsTest {
  private static final ScaleTiles BLOCKS_16 = new ScaleTiles("_scale_inv", DType.F32, 16, 16);

  private static TrainerRankLayout rank(String model, int tp, int rank) {
    return new TrainerTopology.Megatron(tp, 1, 1)
        .layout(ModelConfigs.load(model), DType.BF16)
        .rank(rank);
  }

  private static Predicate<String> linear(String model) {
    ModelArchitecture arch = ModelConfigs.load(model);
    return name ->
        arch.find(name)
            .map(t -> t.shape().rank() >= 2 && Fp8BlockLayout.LINEAR_WEIGHTS.contains(t.role()))
            .orElse(false);
  }

  @Test
  void linearWeightsGetCodesAtTheirOffsetsAndAScaleShardOfTheirTiles() {
    TrainerRankLayout r = rank("tiny-qwen3-moe", 2, 1);
    QuantizedShards q = QuantizedShards.split(r, linear("tiny-qwen3-moe"), BLOCKS_16);
    assertEquals(DType.F8_E4M3FN, q.codes().dtype());
    assertEquals(DType.F32, q.scales().dtype());
    assertEquals(r.aliases().size(), q.plain().aliases().size() + q.pairs().size());
    assertTrue(
        q.plain().aliases().stream().noneMatch(a -> linear("tiny-qwen3-moe").test(a.hfName())));
    for (LocalBuffer b : q.codes().buffers()) {
      assertEquals(r.buffer(b.name()).shape(), b.shape(), b.name());
    }
    // Rank 1 holds k rows [16, 32) of k_proj [32, 64]: its scales are block row 1 of [2, 4].
    QuantizedShards.Pair k =
        q.pairs().stream()
            .filter(p -> p.source().hfName().equals("model.layers.0.self_attn.k_proj.weight"))
            .findFirst()
            .orElseThrow();
    assertEquals(new Box(new long[] {16, 0}, new long[] {32, 64}), k.source().box());
    // Its codes sit at its own offsets, in the one-byte buffer of the same name.
    assertTrue(q.codes().aliases().contains(k.source()));
    assertEquals(DType.F8_E4M3FN, q.codes().buffer(k.source().bufferName()).dtype());
    assertEquals("model.layers.0.self_attn.k_proj.weight_scale_inv", k.scales().hfName());
    assertEquals(Shape.of(2, 4), k.scales().globalShape());
    assertEquals(new Box(new long[] {1, 0}, new long[] {2, 4}), k.scales().box());
    assertEquals(Shape.of(1, 4), q.scales().buffer(k.scales().bufferName()).shape());
  }

  @Test
  void aShardThatCutsATileIsRefusedNamingRankTensorAndBox() {
    // tiny-llama's query groups hold 8 rows of k: half a 16-row block.
    LayoutException e =
        assertThrows(
            LayoutException.class,
            () -> QuantizedShards.split(rank("tiny-llama", 2, 0), linear("tiny-llama"), BLOCKS_16));
    assertTrue(
        e.getMessage()
            .startsWith(
                "trainer rank tp0-pp0-ep0 holds [0:8, 0:64] of"
                    + " 'model.layers.0.self_attn.k_proj.weight' [16, 64]: its rows [0, 8) of 16"
                    + " cut a tile of 16 rows"),
        e.getMessage());
    // Per-channel scales need whole rows: o_proj's columns are split by tensor parallelism.
    e =
        assertThrows(
            LayoutException.class,
            () ->
                QuantizedShards.split(
                    rank("tiny-llama", 2, 0),
                    linear("tiny-llama"),
                    new ScaleTiles("_scale", DType.F32, 1, ScaleTiles.WHOLE)));
    assertTrue(e.getMessage().contains("o_proj.weight"), e.getMessage());
    assertTrue(e.getMessage().contains("its scales span every column"), e.getMessage());
  }

  @Test
  void aBufferHoldingQuantizedAndPlainTensorsIsRefused() {
    LayoutException e =
        assertThrows(
            LayoutException.class,
            () ->
                QuantizedShards.split(
                    rank("tiny-qwen3-moe", 2, 0),
                    name -> name.endsWith(".q_proj.weight"),
                    BLOCKS_16));
    assertTrue(e.getMessage().contains("linear_qkv"), e.getMessage());
    assertTrue(
        e.getMessage()
            .contains("holds tensors published quantized and others published as they are"),
        e.getMessage());
    assertFalse(e.getMessage().isBlank());
  }
}
