package dev.mx.layout.vllm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Expert remapping (EPLB): the {@code redundant=N} rule, the JSON form and its bad input, and the
 * layout's slots checked element by element against the reference (slot = its logical expert).
 */
class ExpertPlacementTest {
  private static final ModelArchitecture MOE = ModelConfigs.load("tiny-qwen3-moe");

  /** Layers 1..3 are MoE (layer 0 is dense); 8 logical experts, two slots pointing at one. */
  private static final String PERMUTED =
      "{\"1\": [0, 0, 1, 2, 3, 4, 5, 6, 7, 7], \"2\": [7, 6, 5, 4, 3, 2, 1, 0, 1, 1],"
          + " \"3\": [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]}";

  @Test
  void redundantAppendsReplicasOfTheLowestIndexExperts() {
    ExpertPlacement p = ExpertPlacement.redundant(MOE, 2);
    for (int layer : List.of(1, 2, 3)) {
      assertEquals(10, p.slotCount(layer));
      List<Integer> slots = new ArrayList<>();
      for (int s = 0; s < 10; s++) {
        slots.add(p.logical(layer, s));
      }
      assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 0, 1), slots, "layer " + layer);
    }
    assertEquals(List.of(1, 2, 3), toList(p.layers()));
    assertEquals(ExpertPlacement.identity(MOE), ExpertPlacement.redundant(MOE, 0));
  }

  @Test
  void jsonFormReadsBackItsCanonicalForm() {
    ExpertPlacement p = ExpertPlacement.parse(PERMUTED, MOE);
    assertEquals(7, p.logical(2, 0));
    assertEquals(1, p.logical(2, 9));
    assertEquals(p, ExpertPlacement.parse(p.toJson(), MOE));
    assertEquals(
        "{\"1\":[0,0,1,2,3,4,5,6,7,7],\"2\":[7,6,5,4,3,2,1,0,1,1],\"3\":[0,1,2,3,4,5,6,7,0,1]}",
        p.toJson());
  }

  @Test
  void badMapsNameTheLayerAndSlot() {
    assertMessage(
        "layer 2 slot 3: 8 is not a logical expert in [0, 8)",
        "{\"1\": [0], \"2\": [0, 1, 2, 8], \"3\": [0]}");
    assertMessage("layer 1 slot 0: -1 is not a logical expert", "{\"1\": [-1], \"2\": [0]}");
    assertMessage("layer 2 slot 1: \"x\" is not a logical expert", "{\"2\": [0, \"x\"]}");
    assertMessage("layer 3 is missing", "{\"1\": [0], \"2\": [0]}");
    assertMessage("layer 0 is not a mixture-of-experts layer", "{\"0\": [0]}");
    assertMessage("layer 9 is not a mixture-of-experts layer", "{\"9\": [0]}");
    assertMessage("layer 1: expected a non-empty list", "{\"1\": [], \"2\": [0], \"3\": [0]}");
    assertMessage("key 'one' is not a layer index", "{\"one\": [0]}");
    assertMessage("malformed JSON", "{\"1\": [0,");
    assertMessage("expected a JSON object keyed by layer index", "[0, 1]");
    assertMessage("redundant=9: must be between 0 and the 8 logical experts", null);
  }

  /** Fault catalogue EP12, EP17, EP28, EP29: input a lenient reader would have let through. */
  @Test
  void strictReadingRefusesWhatALenientReaderAccepts() {
    String full = "[0, 1, 2, 3, 4, 5, 6, 7]";
    assertMessage(
        "layer 2: 2 of the 8 logical experts have no slot (3, 5)",
        "{\"1\": " + full + ", \"2\": [0, 1, 2, 4, 6, 7, 0, 1], \"3\": " + full + "}");
    assertMessage(
        "malformed JSON: Duplicate field '1'",
        "{\"1\": " + full + ", \"1\": " + full + ", \"2\": " + full + ", \"3\": " + full + "}");
    assertMessage(
        "key '01' is not a layer index in canonical form (write \"1\")",
        "{\"1\": " + full + ", \"01\": " + full + ", \"2\": " + full + ", \"3\": " + full + "}");
    assertMessage(
        "malformed JSON: Trailing token",
        "{\"1\": " + full + ", \"2\": " + full + ", \"3\": " + full + "} [1]");
    assertMessage(
        "layer 1 slot 0: 4294967296 is not a logical expert",
        "{\"1\": [4294967296], \"2\": " + full + ", \"3\": " + full + "}");
    ExpertPlacement ok =
        ExpertPlacement.parse(
            "{\"1\": " + full + ", \"2\": " + full + ", \"3\": " + full + "}", MOE);
    assertEquals(ExpertPlacement.identity(MOE), ok);
  }

  @Test
  void slotsMustSplitOverExpertParallelRanks() {
    ExpertPlacement nine = ExpertPlacement.redundant(MOE, 1);
    LayoutException e =
        assertThrows(LayoutException.class, () -> nine.requireFits(new InferenceTopology(2, 2)));
    assertEquals("layer 1: 9 physical slots do not split over ep 2", e.getMessage());
    nine.requireFits(InferenceTopology.tp(2)); // every rank holds every slot under ep=1
    LayoutException inLayout =
        assertThrows(
            LayoutException.class,
            () -> new VllmLayout(MOE, new InferenceTopology(2, 2), 0, DType.BF16, nine));
    assertTrue(inLayout.getMessage().contains("9 physical slots"), inLayout.getMessage());
  }

  @Test
  void everySlotIsCopiedFromItsLogicalExpert() {
    for (ExpertPlacement p :
        List.of(ExpertPlacement.parse(PERMUTED, MOE), ExpertPlacement.redundant(MOE, 2))) {
      for (InferenceTopology t :
          List.of(InferenceTopology.tp(1), InferenceTopology.tp(2), new InferenceTopology(2, 2))) {
        VllmLayoutTest.assertCopiesMatchReference(MOE, t, p);
      }
    }
  }

  /** Rank 1 of ep=2 under {@link #PERMUTED}: layer 2 slots 5..9 hold experts 2, 1, 0, 1, 1. */
  @Test
  void aLogicalExpertInTwoSlotsIsOneSourceOfTwoCopies() {
    ExpertPlacement p = ExpertPlacement.parse(PERMUTED, MOE);
    VllmLayout layout = new VllmLayout(MOE, new InferenceTopology(2, 2), 1, DType.BF16, p);
    Shape w13 = layout.params().get("model.layers.2.mlp.experts.w13_weight").shape();
    assertEquals(Shape.of(5, 64, 64), w13);
    Set<String> gateSources = new LinkedHashSet<>();
    List<Long> offsetsOfExpert1 = new ArrayList<>();
    for (RecordedCopy c : layout.copies()) {
      if (c.paramName().equals("model.layers.2.mlp.experts.w13_weight")
          && c.srcName().endsWith("gate_proj.weight")) {
        gateSources.add(c.srcName());
        if (c.srcName().equals("model.layers.2.mlp.experts.1.gate_proj.weight")) {
          offsetsOfExpert1.add(c.destOffset());
        }
      }
    }
    assertEquals(
        Set.of(
            "model.layers.2.mlp.experts.2.gate_proj.weight",
            "model.layers.2.mlp.experts.1.gate_proj.weight",
            "model.layers.2.mlp.experts.0.gate_proj.weight"),
        gateSources);
    long perSlot = 2L * 32 * 64;
    assertEquals(List.of(perSlot, 3 * perSlot, 4 * perSlot), offsetsOfExpert1);
  }

  /** The bundled 30B MoE: 128 experts, 48 layers, with 16 redundant slots split over ep=8. */
  @Test
  void qwen3MoeThirtyBillionTakesRedundantSlotsOverEp8() {
    ModelArchitecture big = ModelConfigs.load("qwen3-30b-a3b");
    ExpertPlacement p = ExpertPlacement.redundant(big, 16);
    InferenceTopology t = new InferenceTopology(8, 8);
    VllmLayout last = new VllmLayout(big, t, 7, DType.BF16, p);
    VllmReference ref = new VllmReference(big, t, 7, p);
    String w2 = "model.layers.47.mlp.experts.w2_weight";
    assertEquals(Shape.of(18, big.hiddenSize(), big.moeIntermediateSize()), ref.shape(w2));
    assertEquals(ref.shape(w2), last.params().get(w2).shape());
    // Rank 7 holds slots 126..143: experts 126, 127, then replicas of 0..15.
    List<String> downSources = new ArrayList<>();
    for (RecordedCopy c : last.copies()) {
      if (c.paramName().equals(w2)) {
        downSources.add(c.srcName());
      }
    }
    assertEquals(18, downSources.size());
    assertEquals("model.layers.47.mlp.experts.126.down_proj.weight", downSources.get(0));
    assertEquals("model.layers.47.mlp.experts.0.down_proj.weight", downSources.get(2));
    assertEquals("model.layers.47.mlp.experts.15.down_proj.weight", downSources.get(17));
  }

  private static void assertMessage(String expected, String json) {
    LayoutException e =
        assertThrows(
            LayoutException.class,
            () -> {
              if (json == null) {
                ExpertPlacement.redundant(MOE, 9);
              } else {
                ExpertPlacement.parse(json, MOE);
              }
            });
    assertTrue(
        e.getMessage().startsWith(expected),
        "expected '" + expected + "...', got '" + e.getMessage() + "'");
  }

  private static List<Integer> toList(Iterable<Integer> it) {
    List<Integer> out = new ArrayList<>();
    it.forEach(out::add);
    return out;
  }
}
