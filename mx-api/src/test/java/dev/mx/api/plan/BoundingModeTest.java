package dev.mx.api.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link BoundingMode}: labels, parsing, and the receiver's settings (defaults and full mapping).
 */
class BoundingModeTest {

  @Test
  void parsesLabelsInAnyCase() {
    assertEquals(BoundingMode.SHARD, BoundingMode.parse(" Shard "));
    assertEquals(BoundingMode.MODELEXPRESS, BoundingMode.parse("modelexpress"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> BoundingMode.parse("mx"));
    assertEquals("unknown bounding mode 'mx'; expected modelexpress or shard", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> BoundingMode.parse(null));
  }

  @Test
  void settingsDefaultAndMapping() {
    assertEquals(
        BoundingMode.SHARD,
        BoundingMode.fromSettings(Settings.of(Map.of(), Map.of()), BoundingMode.SHARD));
    assertEquals(
        BoundingMode.MODELEXPRESS,
        BoundingMode.fromSettings(
            Settings.of(Map.of(), Map.of("MX_RESHARD_BOUNDING", "modelexpress")),
            BoundingMode.SHARD));
    assertEquals(
        BoundingMode.SHARD,
        BoundingMode.fromSettings(
            Settings.of(
                Map.of("mx.receiver.bounding", "shard"),
                Map.of("MX_RESHARD_BOUNDING", "modelexpress")),
            BoundingMode.MODELEXPRESS),
        "the property wins");
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                BoundingMode.fromSettings(
                    Settings.of(Map.of(), Map.of("MX_RESHARD_BOUNDING", "shards")),
                    BoundingMode.SHARD));
    assertTrue(
        e.getMessage().startsWith("MX_RESHARD_BOUNDING: unknown bounding mode 'shards'"),
        e.getMessage());
  }
}
