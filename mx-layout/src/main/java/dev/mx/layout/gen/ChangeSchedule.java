package dev.mx.layout.gen;

import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which tensors a step of the demo's generator changes (partial, "delta" refits), so that anyone
 * can recompute it. Step 0 writes every tensor. At step {@code s >= 1} the model's tensors are
 * ranked by {@code splitmix64(WeightGenerator.key(name, s))} as an unsigned number, ascending (ties
 * by name), and taken in that order while the elements taken so far are below {@code pct}% of all
 * elements: the last tensor taken may overshoot, {@code pct = 0} takes none and {@code pct = 100}
 * all. A tensor that step {@code s} does not take keeps the values of the last step that took it:
 * its values at {@code s} are the generator's at {@link #stepOf(String, long)}.
 */
public final class ChangeSchedule {
  private final List<GlobalTensor> tensors;
  private final long totalElements;
  private final int pct;

  /** Last-changed step of every tensor, by step (memoized from step 0 up). */
  private final List<Map<String, Long>> lastChanged = new ArrayList<>();

  /**
   * The schedule of {@code model} changing {@code pct}% of its elements per step.
   *
   * @throws IllegalArgumentException when {@code pct} is outside 0–100
   */
  public ChangeSchedule(ModelArchitecture model, int pct) {
    if (pct < 0 || pct > 100) {
      throw new IllegalArgumentException("changed percentage " + pct + " is outside 0-100");
    }
    this.tensors = List.copyOf(model.tensors());
    this.pct = pct;
    long total = 0;
    for (GlobalTensor t : tensors) {
      total += t.shape().numel();
    }
    this.totalElements = total;
  }

  /** The percentage of elements changed per step. */
  public int percent() {
    return pct;
  }

  /** Whether every step changes every tensor (the generator's plain behaviour). */
  public boolean changesEverything() {
    return pct == 100;
  }

  /** The tensors step {@code step} writes new values into, in the order they were taken. */
  public Set<String> changedAt(long step) {
    Set<String> out = new LinkedHashSet<>();
    if (step == 0 || pct == 100) {
      tensors.forEach(t -> out.add(t.name()));
      return out;
    }
    List<GlobalTensor> ranked = new ArrayList<>(tensors);
    ranked.sort(
        Comparator.comparing(
                (GlobalTensor t) -> WeightGenerator.splitmix64(WeightGenerator.key(t.name(), step)),
                Long::compareUnsigned)
            .thenComparing(GlobalTensor::name));
    long taken = 0;
    for (GlobalTensor t : ranked) {
      if (taken * 100 >= (long) pct * totalElements) {
        break;
      }
      out.add(t.name());
      taken += t.shape().numel();
    }
    return out;
  }

  /**
   * The step whose generator values tensor {@code name} holds at {@code step}: the last step at or
   * before it that changed the tensor.
   */
  public synchronized long stepOf(String name, long step) {
    if (pct == 100) {
      return step;
    }
    while (lastChanged.size() <= step) {
      long s = lastChanged.size();
      Map<String, Long> m = s == 0 ? new HashMap<>() : new HashMap<>(lastChanged.get((int) s - 1));
      for (String t : changedAt(s)) {
        m.put(t, s);
      }
      lastChanged.add(m);
    }
    Long last = lastChanged.get(Math.toIntExact(step)).get(name);
    if (last == null) {
      throw new IllegalArgumentException("no tensor '" + name + "' in the schedule");
    }
    return last;
  }
}
