package dev.mx.layout.trainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** ModelExpress (ARCHITECTURE §7.6): the worked examples and the error cases of the alias rules. */
class MegatronAliasesTest {

  private static final List<String> GATE_UP = List.of("mlp.gate_proj.weight", "mlp.up_proj.weight");
  private static final List<String> QKV =
      List.of("q_proj.weight", "k_proj.weight", "v_proj.weight");
  private static final Map<String, String> GATED = Map.of("gated_mlp_order", "gate_then_up");

  private static Map<String, String> qkvExtras(int q, int kv, int hd) {
    return Map.of(
        "num_heads",
        "" + q,
        "num_kv_heads",
        "" + kv,
        "head_dim",
        "" + hd,
        "qkv_interleave",
        "by_head");
  }

  private static AliasShard alias(
      String hf, Shape full, long[] offset, Shape shape, String buffer, long elementOffset) {
    return new AliasShard(hf, full, offset, shape, buffer, elementOffset, true);
  }

  @Test
  void gatedHalvesOfTheSecondOfTwoRanks() {
    // ModelExpress (ARCHITECTURE §7.6): local (4,3), range (4,8) of global (8,3) -> gate and up
    // each full (4,3), offset
    // (2,0), shape (2,3);
    // up starts 6 elements after the base.
    var spec =
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(8, 3),
            0,
            4,
            8,
            GATED);
    assertEquals(
        List.of(
            alias(
                "mlp.gate_proj.weight",
                Shape.of(4, 3),
                new long[] {2, 0},
                Shape.of(2, 3),
                "fc1",
                0),
            alias(
                "mlp.up_proj.weight", Shape.of(4, 3), new long[] {2, 0}, Shape.of(2, 3), "fc1", 6)),
        MegatronAliases.resolve(spec, true));
  }

  @Test
  void replicatedGatedTensorIsUnsharded() {
    var spec =
        MegatronTensorSpec.replicate(
            "fc1", Shape.of(4, 3), MegatronRole.GATED_MLP_COLUMN, GATE_UP, Shape.of(4, 3), GATED);
    List<AliasShard> a = MegatronAliases.resolve(spec, true);
    assertEquals(Shape.of(2, 3), a.get(0).globalShape());
    assertEquals(0, a.get(1).shardOffset()[0]);
    assertEquals(6, a.get(1).elementOffset());
  }

  @Test
  void qkvBandsOfFourRanksWithFewerKvHeadsThanRanks() {
    // ModelExpress (ARCHITECTURE §7.6): q=4, kv=2, head_dim=1, hidden=2, TP=4, 2 rows per rank.
    Shape full = Shape.of(8, 2);
    List<List<AliasShard>> ranks = new ArrayList<>();
    for (int r = 0; r < 4; r++) {
      var spec =
          MegatronTensorSpec.shard(
              "qkv",
              Shape.of(2, 2),
              MegatronRole.QKV_COLUMN,
              QKV,
              full,
              0,
              2L * r,
              2L * r + 2,
              qkvExtras(4, 2, 1));
      ranks.add(MegatronAliases.resolve(spec, true));
    }
    Shape q = Shape.of(4, 2);
    Shape kv = Shape.of(2, 2);
    assertEquals(
        List.of(alias("q_proj.weight", q, new long[] {0, 0}, Shape.of(2, 2), "qkv", 0)),
        ranks.get(0));
    assertEquals(
        List.of(
            alias("k_proj.weight", kv, new long[] {0, 0}, Shape.of(1, 2), "qkv", 0),
            alias("v_proj.weight", kv, new long[] {0, 0}, Shape.of(1, 2), "qkv", 2)),
        ranks.get(1));
    assertEquals(
        List.of(alias("q_proj.weight", q, new long[] {2, 0}, Shape.of(2, 2), "qkv", 0)),
        ranks.get(2));
    assertEquals(
        List.of(
            alias("k_proj.weight", kv, new long[] {1, 0}, Shape.of(1, 2), "qkv", 0),
            alias("v_proj.weight", kv, new long[] {1, 0}, Shape.of(1, 2), "qkv", 2)),
        ranks.get(3));
  }

  @Test
  void qkvRowsNotAlignedWithGroupsSplitBands() {
    // q=4, kv=2, head_dim=2: two groups of 8 rows (4 q, 2 k, 2 v). Rows [4, 12) straddle both
    // groups.
    var spec =
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(8, 3),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(16, 3),
            0,
            4,
            12,
            qkvExtras(4, 2, 2));
    List<AliasShard> a = MegatronAliases.resolve(spec, true);
    // rows 4-5 k head 0, rows 6-7 v head 0, rows 8-11 q rows 4-7 (group 1)
    assertEquals(
        List.of(
            alias("k_proj.weight", Shape.of(4, 3), new long[] {0, 0}, Shape.of(2, 3), "qkv", 0),
            alias("v_proj.weight", Shape.of(4, 3), new long[] {0, 0}, Shape.of(2, 3), "qkv", 6),
            alias("q_proj.weight", Shape.of(8, 3), new long[] {4, 0}, Shape.of(4, 3), "qkv", 12)),
        a);
  }

  @Test
  void qkvBiasIsOneDimensional() {
    var spec =
        MegatronTensorSpec.shard(
            "qkv.bias",
            Shape.of(2),
            MegatronRole.QKV_COLUMN,
            List.of("q_proj.bias", "k_proj.bias", "v_proj.bias"),
            Shape.of(8),
            0,
            2,
            4,
            qkvExtras(4, 2, 1));
    assertEquals(
        List.of(
            alias("k_proj.bias", Shape.of(2), new long[] {0}, Shape.of(1), "qkv.bias", 0),
            alias("v_proj.bias", Shape.of(2), new long[] {0}, Shape.of(1), "qkv.bias", 1)),
        MegatronAliases.resolve(spec, true));
  }

  @Test
  void legacyQkvUsesLocalHeadCounts() {
    Map<String, String> extras =
        Map.of("head_dim", "1", "num_heads_local", "2", "num_kv_heads_local", "1");
    var spec =
        MegatronTensorSpec.shard(
            "qkv", Shape.of(4, 2), MegatronRole.QKV_COLUMN, QKV, Shape.of(8, 2), 0, 4, 8, extras);
    assertEquals(
        List.of(
            alias("q_proj.weight", Shape.of(4, 2), new long[] {2, 0}, Shape.of(2, 2), "qkv", 0),
            alias("k_proj.weight", Shape.of(2, 2), new long[] {1, 0}, Shape.of(1, 2), "qkv", 4),
            alias("v_proj.weight", Shape.of(2, 2), new long[] {1, 0}, Shape.of(1, 2), "qkv", 6)),
        MegatronAliases.resolve(spec, true));
  }

  @Test
  void singleNamesColumnRowReplicatedAndClippedVocabulary() {
    var col =
        MegatronTensorSpec.shard(
            "c", Shape.of(2, 4), MegatronRole.COLUMN, List.of("w"), Shape.of(6, 4), 0, 2, 4, null);
    assertEquals(
        List.of(alias("w", Shape.of(6, 4), new long[] {2, 0}, Shape.of(2, 4), "c", 0)),
        MegatronAliases.resolve(col, true));
    var row =
        MegatronTensorSpec.shard(
            "r", Shape.of(4, 2), MegatronRole.ROW, List.of("w"), Shape.of(4, 6), 1, 4, 6, null);
    assertEquals(
        List.of(alias("w", Shape.of(4, 6), new long[] {0, 4}, Shape.of(4, 2), "r", 0)),
        MegatronAliases.resolve(row, true));
    var norm =
        MegatronTensorSpec.replicate(
            "n", Shape.of(4), MegatronRole.REPLICATED, List.of("norm"), Shape.of(4), null);
    assertEquals(
        List.of(new AliasShard("norm", Shape.of(4), new long[] {0}, Shape.of(4), "n", 0, false)),
        MegatronAliases.resolve(norm, false));
    // vocab 10 padded to 16 over 2 ranks: rank 1 holds rows [8, 16) of which 8-9 are real.
    var vocab =
        MegatronTensorSpec.shard(
            "e",
            Shape.of(8, 2),
            MegatronRole.VOCAB_PARALLEL,
            List.of("embed"),
            Shape.of(10, 2),
            0,
            8,
            16,
            null);
    assertEquals(
        List.of(alias("embed", Shape.of(10, 2), new long[] {8, 0}, Shape.of(2, 2), "e", 0)),
        MegatronAliases.resolve(vocab, true));
    var padding =
        MegatronTensorSpec.shard(
            "e",
            Shape.of(8, 2),
            MegatronRole.VOCAB_PARALLEL,
            List.of("embed"),
            Shape.of(7, 2),
            0,
            8,
            16,
            null);
    assertEquals(
        List.of(),
        MegatronAliases.resolve(padding, true),
        "a rank of padding rows publishes nothing");
  }

  private static void rejects(MegatronTensorSpec spec, String... parts) {
    var e = assertThrows(LayoutException.class, () -> MegatronAliases.resolve(spec, true));
    assertTrue(e.getMessage().contains("'" + spec.name() + "'"), e.getMessage());
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' should mention " + p);
    }
  }

  private static void rejectsSpec(Runnable construct, String... parts) {
    var e = assertThrows(LayoutException.class, construct::run);
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' should mention " + p);
    }
  }

  @Test
  void gatedErrorCases() {
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(8, 3),
            0,
            4,
            8,
            null),
        "gated_mlp_order",
        "none");
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(8, 3),
            0,
            4,
            8,
            Map.of("gated_mlp_order", "up_then_gate")),
        "up_then_gate");
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(3, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(6, 3),
            0,
            3,
            6,
            GATED),
        "odd");
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(12, 3),
            0,
            2,
            6,
            GATED),
        "uniform");
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(8, 3),
            0,
            6,
            10,
            GATED),
        "outside");
    rejects(
        MegatronTensorSpec.shard(
            "fc1",
            Shape.of(4, 3),
            MegatronRole.GATED_MLP_COLUMN,
            GATE_UP,
            Shape.of(8, 3),
            0,
            4,
            7,
            GATED),
        "spans 3");
    rejects(
        MegatronTensorSpec.replicate(
            "fc1", Shape.of(2, 2), MegatronRole.EXPERT_COLUMN, GATE_UP, Shape.of(4, 2), GATED),
        "half the global");
  }

  @Test
  void qkvErrorCases() {
    Map<String, String> onlyHeads = new HashMap<>(qkvExtras(4, 2, 1));
    onlyHeads.remove("num_kv_heads");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            0,
            2,
            onlyHeads),
        "num_kv_heads");
    Map<String, String> interleaved = new HashMap<>(qkvExtras(4, 2, 1));
    interleaved.put("qkv_interleave", "by_projection");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            0,
            2,
            interleaved),
        "by_head");
    Map<String, String> noHeadDim = new HashMap<>(qkvExtras(4, 2, 1));
    noHeadDim.remove("head_dim");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            0,
            2,
            noHeadDim),
        "head_dim");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            0,
            2,
            qkvExtras(5, 2, 1)),
        "not a multiple");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(10, 2),
            0,
            0,
            2,
            qkvExtras(4, 2, 1)),
        "global rows 10");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 3),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            0,
            2,
            qkvExtras(4, 2, 1)),
        "hidden");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            1,
            0,
            2,
            qkvExtras(4, 2, 1)),
        "axis 0");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            7,
            9,
            qkvExtras(4, 2, 1)),
        "outside");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(2, 2),
            MegatronRole.QKV_COLUMN,
            List.of("q", "k"),
            Shape.of(8, 2),
            0,
            0,
            2,
            qkvExtras(4, 2, 1)),
        "three names");
    rejects(
        MegatronTensorSpec.shard(
            "qkv",
            Shape.of(3, 2),
            MegatronRole.QKV_COLUMN,
            QKV,
            Shape.of(8, 2),
            0,
            4,
            7,
            Map.of("head_dim", "1", "num_heads_local", "2", "num_kv_heads_local", "1")),
        "local rows 3");
  }

  @Test
  void specAndSingleNameErrorCases() {
    rejects(
        MegatronTensorSpec.shard(
                "c",
                Shape.of(2, 4),
                MegatronRole.COLUMN,
                List.of("w"),
                Shape.of(6, 4),
                0,
                2,
                4,
                null)
            .withStrides(new long[] {1, 2}),
        "not contiguous");
    rejects(
        MegatronTensorSpec.shard(
            "c", Shape.of(2, 4), MegatronRole.COLUMN, List.of("w"), Shape.of(6, 4), 0, 5, 7, null),
        "outside");
    rejects(
        MegatronTensorSpec.shard(
            "c", Shape.of(2, 4), MegatronRole.COLUMN, List.of("w"), Shape.of(6, 5), 0, 2, 4, null),
        "dim 1");
    rejects(
        MegatronTensorSpec.replicate(
            "n", Shape.of(4), MegatronRole.REPLICATED, List.of("norm"), Shape.of(5), null),
        "replicated");
    rejects(
        MegatronTensorSpec.shard(
            "c",
            Shape.of(2, 4),
            MegatronRole.COLUMN,
            List.of("w", "x"),
            Shape.of(6, 4),
            0,
            2,
            4,
            null),
        "exactly one name");
    rejectsSpec(
        () ->
            MegatronTensorSpec.shard(
                "d",
                Shape.of(2),
                MegatronRole.COLUMN,
                List.of("w", "w"),
                Shape.of(4),
                0,
                0,
                2,
                null),
        "not unique");
    rejectsSpec(
        () ->
            MegatronTensorSpec.shard(
                "d", Shape.of(2), MegatronRole.COLUMN, List.of(), Shape.of(4), 0, 0, 2, null),
        "no Hugging Face names");
    rejectsSpec(
        () ->
            MegatronTensorSpec.shard(
                "d", Shape.of(2), MegatronRole.COLUMN, List.of("w"), Shape.of(0), 0, 0, 2, null),
        "non-positive");
    rejectsSpec(
        () ->
            new MegatronTensorSpec(
                "d",
                Shape.of(2),
                null,
                MegatronRole.COLUMN,
                List.of("w"),
                Shape.of(4),
                Placement.SHARD,
                null,
                null,
                null),
        "SHARD");
    rejectsSpec(
        () ->
            new MegatronTensorSpec(
                "d",
                Shape.of(4),
                null,
                MegatronRole.REPLICATED,
                List.of("w"),
                Shape.of(4),
                Placement.REPLICATE,
                0,
                null,
                null),
        "REPLICATE");
    rejectsSpec(
        () ->
            MegatronTensorSpec.shard(
                "", Shape.of(2), MegatronRole.COLUMN, List.of("w"), Shape.of(4), 0, 0, 2, null),
        "empty name");
  }
}
