package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReceiverConfigTest {
  private static final Settings NONE = Settings.of(Map.of(), Map.of());

  @Test
  void defaults() {
    ReceiverConfig d = ReceiverConfig.fromProperties(Map.of(), NONE);
    assertEquals(ReceiverConfig.defaults(), d);
    assertEquals("fused", d.wire());
    assertEquals(VerifyMode.ALL, d.verify());
    assertEquals(0, d.rank());
    assertEquals(Duration.ofSeconds(1200), d.timeout());
    assertEquals(false, d.doubleBuffer());
    assertEquals(0, d.threads());
    assertEquals(dev.mx.api.plan.BoundingMode.SHARD, d.bounding());
    assertTrue(d.effectiveThreads() >= 1);
  }

  @Test
  void fullMapping() {
    Map<String, String> props =
        Map.of(
            "mx.receiver.wire", "PHASED",
            "mx.receiver.verify", "strict",
            "mx.receiver.rank", "7",
            "mx.receiver.timeout-seconds", "2.5",
            "mx.receiver.double-buffer", "true",
            "mx.receiver.threads", "3",
            "mx.receiver.bounding", "modelexpress",
            "mx.receiver.staging-bytes", "64m",
            "mx.receiver.landing-bytes", "0");
    ReceiverConfig c = ReceiverConfig.fromProperties(props, NONE);
    assertEquals(
        new ReceiverConfig(
            "phased",
            VerifyMode.STRICT,
            7,
            Duration.ofMillis(2500),
            true,
            3,
            dev.mx.api.plan.BoundingMode.MODELEXPRESS,
            java.util.OptionalLong.of(64L << 20),
            java.util.OptionalLong.of(0)),
        c);
    assertEquals(c, ReceiverConfig.fromProperties(c.toProperties(), NONE));
    assertEquals(ReceiverConfig.KEYS.size(), c.toProperties().size());
  }

  @Test
  void wireFollowsMxReshardFusedWireWhenUnset() {
    assertEquals(
        "phased",
        ReceiverConfig.fromProperties(
                Map.of(), Settings.of(Map.of(), Map.of("MX_RESHARD_FUSED_WIRE", "0")))
            .wire());
    assertEquals(
        "fused",
        ReceiverConfig.fromProperties(
                Map.of("mx.receiver.wire", "fused"),
                Settings.of(Map.of(), Map.of("MX_RESHARD_FUSED_WIRE", "0")))
            .wire());
    assertEquals(
        "phased",
        ReceiverConfig.fromSettings(Settings.of(Map.of("mx.receiver.wire", "phased"), Map.of()))
            .wire());
  }

  @Test
  void boundingFollowsMxReshardBoundingWhenUnsetAndAMisspeltModeIsAnError() {
    assertEquals(
        dev.mx.api.plan.BoundingMode.MODELEXPRESS,
        ReceiverConfig.fromProperties(
                Map.of(), Settings.of(Map.of(), Map.of("MX_RESHARD_BOUNDING", "modelexpress")))
            .bounding());
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ReceiverConfig.fromProperties(Map.of("mx.receiver.bounding", "shards"), NONE));
    assertTrue(
        e.getMessage().contains("mx.receiver.bounding") && e.getMessage().contains("shards"),
        e.getMessage());
  }

  @Test
  void unknownKeysSuggestTheClosestAndBadValuesNameTheKey() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ReceiverConfig.fromProperties(Map.of("mx.receiver.verfy", "off"), NONE));
    assertTrue(e.getMessage().contains("did you mean 'mx.receiver.verify'"), e.getMessage());
    for (Map<String, String> bad :
        java.util.List.of(
            Map.of("mx.receiver.verify", "sometimes"), Map.of("mx.receiver.rank", "-1"),
            Map.of("mx.receiver.rank", "one"), Map.of("mx.receiver.timeout-seconds", "0"),
            Map.of("mx.receiver.double-buffer", "maybe"), Map.of("mx.receiver.threads", "-2"))) {
      String key = bad.keySet().iterator().next();
      IllegalArgumentException x =
          assertThrows(
              IllegalArgumentException.class, () -> ReceiverConfig.fromProperties(bad, NONE), key);
      assertTrue(x.getMessage().contains(key), x.getMessage());
    }
  }
}
