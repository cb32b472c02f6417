package dev.mx.metadata.progress;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A stall limit must span a few heartbeat periods, however it is set. */
class ProgressSettingsTest {

  @Test
  void aStallLimitBelowThreePeriodsIsRefusedNamingBothSettings() {
    Settings tooShort = Settings.of(Map.of(), Map.of("MX_STALL_LIMIT_S", "5"));
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ProgressSettings.stallLimit(tooShort));
    assertEquals(
        "mx.stall-limit / MX_STALL_LIMIT_S 5 s is below 3 heartbeat periods (mx.heartbeat-period /"
            + " MX_HEARTBEAT_PERIOD_S = 2 s): a healthy peer would be taken for stalled; give at"
            + " least 6 s or a shorter heartbeat period",
        e.getMessage());
  }

  @Test
  void aShorterHeartbeatPeriodAllowsAShorterStallLimit() {
    Settings fast =
        Settings.of(Map.of(), Map.of("MX_STALL_LIMIT_S", "1.5", "MX_HEARTBEAT_PERIOD_S", "0.5"));
    assertEquals(Duration.ofMillis(1500), ProgressSettings.stallLimit(fast));
    assertEquals(
        Duration.ofSeconds(60), ProgressSettings.stallLimit(Settings.of(Map.of(), Map.of())));
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ProgressSettings.requireSpansHeartbeats(
                    "--stall-limit",
                    1.4,
                    Settings.of(Map.of(), Map.of("MX_HEARTBEAT_PERIOD_S", "0.5"))));
    assertTrue(
        e.getMessage().startsWith("--stall-limit 1.4 s is below 3 heartbeat periods"),
        e.getMessage());
  }
}
