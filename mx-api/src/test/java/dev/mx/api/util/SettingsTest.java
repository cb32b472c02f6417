package dev.mx.api.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsTest {

  @Test
  void booleansAcceptTheModelExpressSpellingsAndFallBackOnGarbage() {
    for (String t : new String[] {"1", "true", "YES", "On"}) {
      assertTrue(Settings.of(Map.of(), Map.of("E", t)).bool("p", "E", false), t);
    }
    for (String f : new String[] {"0", "false", "No", "OFF"}) {
      assertFalse(Settings.of(Map.of(), Map.of("E", f)).bool("p", "E", true), f);
    }
    assertTrue(Settings.of(Map.of(), Map.of("E", "maybe")).bool("p", "E", true));
    assertFalse(
        Settings.of(Map.of("p", "false"), Map.of("E", "true")).bool("p", "E", true),
        "property wins");
  }

  @Test
  void positiveFiniteRejectsZeroNegativeInfinityNanAndGarbage() {
    for (String bad : new String[] {"0", "-1", "inf", "Infinity", "NaN", "abc"}) {
      assertEquals(
          20.0, Settings.of(Map.of(), Map.of("E", bad)).positiveFinite("p", "E", 20.0), bad);
    }
    assertEquals(2.5, Settings.of(Map.of(), Map.of("E", "2.5")).positiveFinite("p", "E", 20.0));
  }

  @Test
  void integersFallBackOnGarbage() {
    assertEquals(64, Settings.of(Map.of(), Map.of("E", "x")).integer("p", "E", 64));
    assertEquals(8, Settings.of(Map.of(), Map.of("E", " 8 ")).integer("p", "E", 64));
  }
}
