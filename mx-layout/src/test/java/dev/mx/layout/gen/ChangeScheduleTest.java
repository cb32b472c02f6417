package dev.mx.layout.gen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The documented rule of {@code --changed PCT}, recomputed here from its description. */
class ChangeScheduleTest {
  private static final ModelArchitecture LLAMA = ModelConfigs.load("tiny-llama");

  /** The rule as the help text states it, written independently of the class. */
  private static Set<String> byTheRule(ModelArchitecture model, int pct, long step) {
    List<GlobalTensor> ranked = new ArrayList<>(model.tensors());
    long total = 0;
    for (GlobalTensor t : ranked) {
      total += t.shape().numel();
    }
    ranked.sort(
        (a, b) -> {
          long ka = WeightGenerator.splitmix64(WeightGenerator.key(a.name(), step));
          long kb = WeightGenerator.splitmix64(WeightGenerator.key(b.name(), step));
          int c = Long.compareUnsigned(ka, kb);
          return c != 0 ? c : a.name().compareTo(b.name());
        });
    Set<String> out = new LinkedHashSet<>();
    double taken = 0;
    for (GlobalTensor t : ranked) {
      if (taken / total * 100 >= pct) {
        break;
      }
      out.add(t.name());
      taken += t.shape().numel();
    }
    return out;
  }

  @Test
  void eachStepTakesTheRankedTensorsUntilPctOfTheElements() {
    for (int pct : new int[] {1, 10, 37, 90}) {
      ChangeSchedule s = new ChangeSchedule(LLAMA, pct);
      for (long step = 1; step < 6; step++) {
        assertEquals(byTheRule(LLAMA, pct, step), s.changedAt(step), pct + "% step " + step);
      }
    }
  }

  @Test
  void stepZeroAndHundredPercentChangeEverythingZeroPercentNothing() {
    int all = LLAMA.tensors().size();
    assertEquals(all, new ChangeSchedule(LLAMA, 0).changedAt(0).size());
    assertEquals(0, new ChangeSchedule(LLAMA, 0).changedAt(3).size());
    assertEquals(all, new ChangeSchedule(LLAMA, 100).changedAt(3).size());
    assertEquals(7, new ChangeSchedule(LLAMA, 100).stepOf("model.norm.weight", 7));
    assertEquals(0, new ChangeSchedule(LLAMA, 0).stepOf("model.norm.weight", 7));
  }

  @Test
  void aTensorHoldsTheValuesOfTheLastStepThatChangedIt() {
    ChangeSchedule s = new ChangeSchedule(LLAMA, 10);
    for (GlobalTensor t : LLAMA.tensors()) {
      long last = 0;
      for (long step = 0; step < 8; step++) {
        if (s.changedAt(step).contains(t.name())) {
          last = step;
        }
        assertEquals(last, s.stepOf(t.name(), step), t.name() + " at step " + step);
      }
    }
  }

  @Test
  void aPercentageOutsideZeroToHundredIsRefused() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> new ChangeSchedule(LLAMA, 101));
    assertTrue(e.getMessage().contains("101"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new ChangeSchedule(LLAMA, -1));
  }
}
