package dev.mx.api.util;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class SettingsTest {

  @Test
  void booleansAcceptTheModelExpressSpellingsAndRejectGarbageNamingTheSetting() {
    for (String t : new String[] {"1", "true", "YES", "On"}) {
      assertTrue(Settings.of(Map.of(), Map.of("E", t)).bool("p", "E", false), t);
    }
    for (String f : new String[] {"0", "false", "No", "OFF"}) {
      assertFalse(Settings.of(Map.of(), Map.of("E", f)).bool("p", "E", true), f);
    }
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Settings.of(Map.of(), Map.of("E", "maybe")).bool("p", "E", true));
    assertTrue(e.getMessage().startsWith("E='maybe' is invalid"), e.getMessage());
    assertTrue(e.getMessage().contains("same setting as p"), e.getMessage());
    assertFalse(
        Settings.of(Map.of("p", "false"), Map.of("E", "true")).bool("p", "E", true),
        "property wins");
  }

  @Test
  void positiveFiniteRejectsZeroNegativeInfinityNanAndGarbage() {
    for (String bad : new String[] {"0", "-1", "inf", "Infinity", "NaN", "abc"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> Settings.of(Map.of(), Map.of("E", bad)).positiveFinite("p", "E", 20.0),
              bad);
      assertTrue(e.getMessage().contains("E='" + bad + "'"), e.getMessage());
    }
    assertEquals(20.0, Settings.of(Map.of(), Map.of()).positiveFinite("p", "E", 20.0), "unset");
    assertEquals(2.5, Settings.of(Map.of(), Map.of("E", "2.5")).positiveFinite("p", "E", 20.0));
  }

  @Test
  void integersRejectGarbageNamingTheProperty() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> Settings.of(Map.of("p", "x"), Map.of()).integer("p", "E", 64));
    assertTrue(e.getMessage().startsWith("-Dp='x' is invalid"), e.getMessage());
    assertEquals(8, Settings.of(Map.of(), Map.of("E", " 8 ")).integer("p", "E", 64));
  }

  @Test
  void anOldSecsNameIsADeprecatedAliasOfTheSName() {
    Settings old = Settings.of(Map.of(), Map.of("MX_STALL_LIMIT_SECS", "7"));
    assertEquals(7.0, old.positiveFinite("mx.stall-limit", "MX_STALL_LIMIT_S", 60));
    assertEquals("MX_STALL_LIMIT_SECS", old.describe("mx.stall-limit", "MX_STALL_LIMIT_S"));
    Settings both =
        Settings.of(Map.of(), Map.of("MX_STALL_LIMIT_SECS", "7", "MX_STALL_LIMIT_S", "9"));
    assertEquals(
        9.0, both.positiveFinite("mx.stall-limit", "MX_STALL_LIMIT_S", 60), "new name wins");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                Settings.of(Map.of(), Map.of("MX_STALL_LIMIT_SECS", "soon"))
                    .positiveFinite("mx.stall-limit", "MX_STALL_LIMIT_S", 60));
    assertTrue(e.getMessage().startsWith("MX_STALL_LIMIT_SECS='soon'"), e.getMessage());
  }
}
