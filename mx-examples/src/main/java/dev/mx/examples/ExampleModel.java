package dev.mx.examples;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.refit.embed.TargetGeometry;
import dev.mx.refit.embed.TargetGeometry.Part;
import dev.mx.refit.embed.TpShard;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Map;

/**
 * The tensors both examples move: an attention block's q, k, v and o projections in f32. Trainers
 * hold them Megatron-style at TP=2; receivers want them vLLM-style at TP=4, with q, k and v fused
 * into {@code qkv_proj}.
 */
public final class ExampleModel {
  public static final int TRAINER_TP = 2;
  public static final int INFERENCE_TP = 4;
  public static final Map<String, Shape> GLOBALS =
      Map.of(
          "q_proj.weight",
          Shape.of(8, 16),
          "k_proj.weight",
          Shape.of(4, 16),
          "v_proj.weight",
          Shape.of(4, 16),
          "o_proj.weight",
          Shape.of(16, 8));

  private ExampleModel() {}

  /** Element {@code i} of global tensor {@code name}: a value anyone can recompute. */
  public static float value(String name, long i) {
    return name.charAt(0) * 1000 + i;
  }

  /** The whole global tensor {@code name}, row-major f32. */
  public static MemorySegment global(Arena arena, String name) {
    Shape s = GLOBALS.get(name);
    MemorySegment m = arena.allocate(s.numel() * 4, 64);
    for (long i = 0; i < s.numel(); i++) {
      m.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(name, i));
    }
    return m;
  }

  /**
   * How trainer rank {@code t} shards {@code name}: q, k, v column-parallel (dim 0), o row-parallel
   * (dim 1).
   */
  public static TpShard trainerShard(String name, int t) {
    return TpShard.of(GLOBALS.get(name), name.startsWith("o") ? 1 : 0, t, TRAINER_TP);
  }

  /** What inference rank {@code r} holds: a fused qkv_proj and its shard of o_proj. */
  public static TargetGeometry receiverGeometry(int r) {
    TpShard q = TpShard.of(GLOBALS.get("q_proj.weight"), 0, r, INFERENCE_TP);
    TpShard k = TpShard.of(GLOBALS.get("k_proj.weight"), 0, r, INFERENCE_TP);
    TpShard v = TpShard.of(GLOBALS.get("v_proj.weight"), 0, r, INFERENCE_TP);
    return TargetGeometry.builder()
        .fused(
            "qkv_proj.weight",
            DType.F32,
            Part.of("q_proj.weight", q),
            Part.of("k_proj.weight", k),
            Part.of("v_proj.weight", v))
        .shard(
            "o_proj.weight",
            "o_proj.weight",
            TpShard.of(GLOBALS.get("o_proj.weight"), 1, r, INFERENCE_TP),
            DType.F32)
        .build();
  }
}
