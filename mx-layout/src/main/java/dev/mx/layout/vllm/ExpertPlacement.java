package dev.mx.layout.vllm;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.mx.layout.LayoutException;
import dev.mx.layout.model.ModelArchitecture;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where the inference engine places its experts after expert-parallel load balancing (EPLB): per
 * mixture-of-experts layer, the logical (trainer) expert each physical slot holds. Physical slots
 * may outnumber logical experts (redundant experts); every slot is installed from its logical
 * expert. Under {@code ep=T} rank {@code r} holds slots {@code [r·P/T, (r+1)·P/T)}; under {@code
 * ep=1} every rank holds every slot, sliced by tp. The router ({@code mlp.gate.weight}) keeps its
 * logical rows.
 *
 * <p>The JSON form is an object keyed by layer index, each value the list of logical experts by
 * physical slot: {@code {"1": [0, 1, 2, 3, 4, 5, 6, 7, 0, 1], "2": [...]}}. Every MoE layer must be
 * present and no other.
 */
public final class ExpertPlacement {
  /**
   * Strict reading: a key given twice (the last would win silently) and content after the document
   * are refused, as the plan parser refuses them.
   */
  private static final ObjectMapper JSON =
      JsonMapper.builder()
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .build();

  /** Logical expert by physical slot, per MoE layer. */
  private final Map<Integer, int[]> slots;

  private ExpertPlacement(Map<Integer, int[]> slots) {
    this.slots = slots;
  }

  /** Slot {@code s} holds expert {@code s}: the trainer's own order, no redundancy. */
  public static ExpertPlacement identity(ModelArchitecture model) {
    Map<Integer, int[]> m = new TreeMap<>();
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      if (model.isMoeLayer(l)) {
        int[] s = new int[model.numExperts()];
        Arrays.setAll(s, i -> i);
        m.put(l, s);
      }
    }
    return new ExpertPlacement(m);
  }

  /**
   * The placement {@code redundant=N}: in every MoE layer, slots {@code 0..E-1} hold experts {@code
   * 0..E-1} and slots {@code E..E+N-1} hold replicas of experts {@code 0..N-1} (with no load
   * statistics, the lowest-index experts are taken as the hottest).
   */
  public static ExpertPlacement redundant(ModelArchitecture model, int n) {
    int e = model.numExperts();
    if (!model.isMoe()) {
      throw new LayoutException(
          "redundant=" + n + ": model " + model.modelName() + " has no mixture-of-experts layer");
    }
    if (n < 0 || n > e) {
      throw new LayoutException(
          "redundant=" + n + ": must be between 0 and the " + e + " logical experts");
    }
    Map<Integer, int[]> m = new TreeMap<>();
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      if (model.isMoeLayer(l)) {
        int[] s = new int[e + n];
        Arrays.setAll(s, i -> i < e ? i : i - e);
        m.put(l, s);
      }
    }
    return new ExpertPlacement(m);
  }

  /**
   * Parses the JSON form (see the class comment) for {@code model}.
   *
   * @throws LayoutException naming the layer and slot at fault: malformed JSON (a key given twice
   *     and content after the object included), a key that is not a layer index in canonical
   *     decimal ({@code "01"} is refused: it would name layer 1 a second time), a layer missing or
   *     not a MoE layer, an empty list, a slot outside the logical experts, or a layer that leaves
   *     a logical expert without a slot (its weights would never be installed)
   */
  public static ExpertPlacement parse(String json, ModelArchitecture model) {
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (JsonProcessingException e) {
      throw new LayoutException("malformed JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw new LayoutException(
          "expected a JSON object keyed by layer index, each value a list of logical experts");
    }
    int e = model.numExperts();
    Map<Integer, int[]> m = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> f = it.next();
      int layer;
      try {
        layer = Integer.parseInt(f.getKey());
      } catch (NumberFormatException notALayer) {
        throw new LayoutException("key '" + f.getKey() + "' is not a layer index");
      }
      if (!Integer.toString(layer).equals(f.getKey())) {
        throw new LayoutException(
            "key '"
                + f.getKey()
                + "' is not a layer index in canonical form (write \""
                + layer
                + "\")");
      }
      if (layer < 0 || layer >= model.numHiddenLayers() || !model.isMoeLayer(layer)) {
        throw new LayoutException(
            "layer " + layer + " is not a mixture-of-experts layer of " + model.modelName());
      }
      JsonNode list = f.getValue();
      if (!list.isArray() || list.isEmpty()) {
        throw new LayoutException("layer " + layer + ": expected a non-empty list of experts");
      }
      int[] s = new int[list.size()];
      for (int i = 0; i < s.length; i++) {
        JsonNode v = list.get(i);
        if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 0 || v.asInt() >= e) {
          throw new LayoutException(
              "layer "
                  + layer
                  + " slot "
                  + i
                  + ": "
                  + v
                  + " is not a logical expert in [0, "
                  + e
                  + ")");
        }
        s[i] = v.asInt();
      }
      m.put(layer, s);
    }
    for (int l = 0; l < model.numHiddenLayers(); l++) {
      if (model.isMoeLayer(l) && !m.containsKey(l)) {
        throw new LayoutException("layer " + l + " is missing (every MoE layer needs its slots)");
      }
    }
    m.forEach((layer, s) -> requireEveryExpertPlaced(layer, s, e));
    return new ExpertPlacement(m);
  }

  /** A logical expert without a slot would silently never be installed on any rank. */
  private static void requireEveryExpertPlaced(int layer, int[] slots, int experts) {
    boolean[] placed = new boolean[experts];
    for (int logical : slots) {
      placed[logical] = true;
    }
    StringBuilder missing = new StringBuilder();
    int count = 0;
    for (int x = 0; x < experts; x++) {
      if (!placed[x]) {
        if (count++ < 8) {
          missing.append(missing.isEmpty() ? "" : ", ").append(x);
        }
      }
    }
    if (count > 0) {
      throw new LayoutException(
          "layer "
              + layer
              + ": "
              + count
              + " of the "
              + experts
              + " logical experts have no slot ("
              + missing
              + (count > 8 ? ", ..." : "")
              + "); every logical expert needs at least one");
    }
  }

  /**
   * Checks that every layer's slots split evenly over {@code topology}'s expert-parallel ranks.
   *
   * @throws LayoutException naming the layer
   */
  public void requireFits(InferenceTopology topology) {
    if (!topology.expertParallel()) {
      return;
    }
    slots.forEach(
        (layer, s) -> {
          if (s.length % topology.ep() != 0) {
            throw new LayoutException(
                "layer "
                    + layer
                    + ": "
                    + s.length
                    + " physical slots do not split over ep "
                    + topology.ep());
          }
        });
  }

  /** The physical slots of MoE layer {@code layer}. */
  public int slotCount(int layer) {
    return slotsOf(layer).length;
  }

  /** The logical expert physical slot {@code slot} of {@code layer} holds. */
  public int logical(int layer, int slot) {
    return slotsOf(layer)[slot];
  }

  /** The MoE layers this placement covers, ascending. */
  public Iterable<Integer> layers() {
    return Collections.unmodifiableSet(slots.keySet());
  }

  private int[] slotsOf(int layer) {
    int[] s = slots.get(layer);
    if (s == null) {
      throw new LayoutException("layer " + layer + " has no expert placement");
    }
    return s;
  }

  /** The JSON form, canonical (layers ascending), which {@link #parse} reads back. */
  public String toJson() {
    ObjectNode root = JSON.createObjectNode();
    slots.forEach(
        (layer, s) -> {
          ArrayNode a = root.putArray(Integer.toString(layer));
          for (int v : s) {
            a.add(v);
          }
        });
    return root.toString();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ExpertPlacement other) || !slots.keySet().equals(other.slots.keySet())) {
      return false;
    }
    for (Map.Entry<Integer, int[]> e : slots.entrySet()) {
      if (!Arrays.equals(e.getValue(), other.slots.get(e.getKey()))) {
        return false;
      }
    }
    return true;
  }

  @Override
  public int hashCode() {
    return toJson().hashCode();
  }

  @Override
  public String toString() {
    return toJson();
  }
}
