package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LivenessTest {

  private static Settings env(String name, String value) {
    return Settings.of(Map.of(), Map.of(name, value));
  }

  @Test
  void defaultsAreThoseOfModelExpress() {
    Settings none = Settings.of(Map.of(), Map.of());
    assertEquals(Duration.ofSeconds(30), Liveness.heartbeatInterval(none));
    assertEquals(Duration.ofSeconds(90), Liveness.heartbeatTimeout(none));
    assertEquals(Duration.ofSeconds(3600), Liveness.gcTimeout(none));
  }

  @Test
  void theHeartbeatIntervalMustBePositiveAndFinite() {
    assertEquals(
        Duration.ofMillis(500),
        Liveness.heartbeatInterval(env("MX_HEARTBEAT_INTERVAL_SECS", "0.5")));
    for (String bad : new String[] {"0", "-1", "inf", "NaN", "often"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> Liveness.heartbeatInterval(env("MX_HEARTBEAT_INTERVAL_SECS", bad)),
              bad);
      assertTrue(
          e.getMessage().contains("MX_HEARTBEAT_INTERVAL_SECS") && e.getMessage().contains(bad),
          e.getMessage());
    }
  }

  @Test
  void invalidTimeoutsFailNamingTheSetting() {
    assertEquals(
        Duration.ofSeconds(12), Liveness.heartbeatTimeout(env("MX_HEARTBEAT_TIMEOUT_S", "12")));
    for (String bad : new String[] {"0", "-5", "inf", "x"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () -> Liveness.heartbeatTimeout(env("MX_HEARTBEAT_TIMEOUT_S", bad)),
              bad);
      assertTrue(e.getMessage().startsWith("MX_HEARTBEAT_TIMEOUT_S='" + bad + "'"), e.getMessage());
    }
    assertEquals(Duration.ofSeconds(60), Liveness.gcTimeout(env("MX_GC_TIMEOUT_S", "60")));
    assertEquals(
        Duration.ofSeconds(61),
        Liveness.gcTimeout(env("MX_GC_TIMEOUT_SECS", "61")),
        "the old name still works, as a deprecated alias");
  }
}
