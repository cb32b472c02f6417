package dev.mx.cli.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@code --serve-installed}'s doubling rounds: who reads whom, in which round, who serves. */
class InferenceGroupTest {

  private static WorkerSpec.InferenceGroup group(int index, int count) {
    return new WorkerSpec.InferenceGroup(index, count, true);
  }

  @Test
  void eachRoundDoublesTheGroupsHoldingTheStep() {
    int[] sources = {-1, 0, 0, 1, 0, 1, 2, 3};
    int[] rounds = {0, 1, 2, 2, 3, 3, 3, 3};
    for (int g = 0; g < 8; g++) {
      WorkerSpec.InferenceGroup group = group(g, 8);
      assertEquals(g > 0, group.readsInstalled(), "group " + g);
      if (g > 0) {
        assertEquals(sources[g], group.sourceGroup(), "group " + g + " reads");
      }
      assertEquals(rounds[g], group.round(), "group " + g + "'s round");
    }
  }

  @Test
  void aGroupServesWhenALaterGroupReadsIt() {
    // Of 8: 0 serves 1, 2, 4; 1 serves 3, 5; 2 serves 6; 3 serves 7; 4..7 nobody.
    for (int g = 0; g < 8; g++) {
      assertEquals(g < 4, group(g, 8).serves(), "group " + g + " of 8");
    }
    // Of 3: 0 serves 1 and 2; 1 would serve 3, which does not exist.
    assertTrue(group(0, 3).serves());
    assertFalse(group(1, 3).serves());
    assertFalse(group(2, 3).serves());
    assertFalse(new WorkerSpec.InferenceGroup(0, 4, false).serves(), "no fan-out, no serving");
    assertFalse(new WorkerSpec.InferenceGroup(1, 4, false).readsInstalled());
  }
}
