package dev.mx.api.metadata;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * One version of a model's weights in a {@link WeightVersionStore}, as of one atomic read.
 *
 * @param id the version id, unique per model
 * @param model the model identity (the same string publishers and receivers use)
 * @param step the training step whose weights the version carries (0 is a real step)
 * @param expectedSlots the publisher slots (trainer ranks) that must land before the version is
 *     READY, sorted
 * @param state the lifecycle state
 * @param slots the slots that landed so far and their status, by slot
 * @param createdAtMillis when it was created (epoch milliseconds, the store's clock)
 */
public record WeightVersion(
    String id,
    String model,
    long step,
    List<String> expectedSlots,
    WeightVersionState state,
    Map<String, SlotStatus> slots,
    long createdAtMillis) {

  public WeightVersion {
    Objects.requireNonNull(id, "version id");
    Objects.requireNonNull(model, "model of version " + id);
    Objects.requireNonNull(state, "state of version " + id);
    expectedSlots = expectedSlots.stream().sorted().toList();
    slots = Collections.unmodifiableMap(new TreeMap<>(slots));
  }

  /** Expected slots that have not landed yet, sorted. */
  public List<String> missingSlots() {
    List<String> out = new ArrayList<>();
    for (String s : expectedSlots) {
      if (!slots.containsKey(s)) {
        out.add(s);
      }
    }
    return out;
  }

  /** Slots whose publisher marked them STALE, sorted. */
  public List<String> staleSlots() {
    return slots.entrySet().stream()
        .filter(e -> e.getValue() == SlotStatus.STALE)
        .map(Map.Entry::getKey)
        .toList();
  }

  /** READY with every slot still READY: the only kind of version a receiver may read. */
  public boolean isReadable() {
    return state == WeightVersionState.READY && staleSlots().isEmpty() && missingSlots().isEmpty();
  }

  /** A short description for messages: id, step, state, and what is missing or stale. */
  public String describe() {
    Map<String, Object> parts = new LinkedHashMap<>();
    parts.put("step", step);
    parts.put("state", state);
    if (!missingSlots().isEmpty()) {
      parts.put("missing slots", missingSlots());
    }
    if (!staleSlots().isEmpty()) {
      parts.put("stale slots", staleSlots());
    }
    return "version '" + id + "' of '" + model + "' " + parts;
  }
}
