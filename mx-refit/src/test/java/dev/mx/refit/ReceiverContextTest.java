package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.plan.BoundingMode;
import dev.mx.api.util.Settings;
import dev.mx.refit.cast.Fp8Rounding;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** The concluded receiver context: every setting accepted, unknown names answered, keys crossed. */
class ReceiverContextTest {
  private static final Settings NONE = Settings.of(Map.of(), Map.of());

  private static ReceiverContext of(Map<String, String> properties) {
    return ReceiverContext.fromProperties(properties, NONE, false);
  }

  @Test
  void everyDeclaredSettingIsAcceptedAtItsDefaultAndTheDefaultsAreThoseConcluded() {
    Map<String, String> all = new LinkedHashMap<>();
    for (ReceiverSetting s : ReceiverSetting.values()) {
      all.put(s.property(), s.defaultValue());
      of(Map.of(s.property(), s.defaultValue())); // each alone
    }
    ReceiverContext everything = of(all);
    ReceiverContext none = of(Map.of());
    assertEquals(ReceiverConfig.defaults(), none.config());
    assertEquals(none.config().withLandingBytes(8L << 20), everything.config());
    assertEquals(OptionalLong.empty(), everything.stagingBytes());
    assertEquals(8L << 20, everything.landingBytes());
    assertEquals(64, everything.maxSegmentsPerCopy());
    assertTrue(everything.batchInstall() && everything.cacheDescriptors() && everything.pipeline());
    assertFalse(everything.requireFullCoverage());
    assertEquals(0.995, everything.coverageFloor());
    assertTrue(everything.stageRecord());
    assertEquals(RefitRecords.Level.DEBUG, everything.stageRecordLevel());
    assertEquals(0.0, everything.maxGbps());
    assertEquals(Fp8Rounding.VLLM, everything.fp8Rounding());
    assertEquals(Fp8Rounding.VLLM, none.fp8Rounding());
  }

  @Test
  void everyMxReceiverKeyInTheSourcesIsDeclaredAndHeldByTheConfig() throws IOException {
    Pattern key = Pattern.compile("\"(mx\\.receiver\\.[a-z-]+)");
    Set<String> found = new TreeSet<>();
    for (Path root : new Path[] {Path.of("src/main/java"), Path.of("../mx-api/src/main/java")}) {
      try (Stream<Path> files = Files.walk(root)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          Matcher m = key.matcher(Files.readString(f));
          while (m.find()) {
            found.add(m.group(1));
          }
        }
      }
    }
    assertTrue(found.size() >= 9, "found " + found);
    assertTrue(ReceiverConfig.KEYS.containsAll(found), "undeclared: " + found);
    for (String k : ReceiverConfig.KEYS) {
      assertTrue(ReceiverSetting.byProperty(k) != null, k);
    }
  }

  @Test
  void theFullMappingIsTypedAndTheMapWinsOverTheEnvironment() {
    Map<String, String> props = new LinkedHashMap<>();
    props.put("mx.receiver.staging-bytes", "16m");
    props.put("mx.receiver.landing-bytes", "1m");
    props.put("mx.reshard.max-segments-per-copy", "9");
    props.put("mx.reshard.fused-wire", "false");
    props.put("mx.reshard.batch-install", "off");
    props.put("mx.reshard.cache-descriptors", "0");
    props.put("mx.reshard.require-full-coverage", "yes");
    props.put("mx.reshard.coverage-floor", "0.5");
    props.put("mx.refit.stage-record", "no");
    props.put("mx.refit.stage-record-level", "info");
    props.put("mx.refit.pipeline", "false");
    props.put("mx.reshard.max-gbps", "400");
    props.put("mx.refit.fp8-rounding", "DeepGEMM");
    Settings env =
        Settings.of(
            Map.of(),
            Map.of(
                "MX_RECEIVER_STAGING_BYTES",
                "1g",
                "MX_REFIT_PIPELINE",
                "1",
                "MX_REFIT_FP8_ROUNDING",
                "exact"));
    ReceiverContext c = ReceiverContext.fromProperties(props, env, false);
    assertEquals(OptionalLong.of(16L << 20), c.stagingBytes());
    assertEquals(1L << 20, c.landingBytes());
    assertEquals(9, c.maxSegmentsPerCopy());
    assertEquals("phased", c.config().wire());
    assertFalse(c.batchInstall() || c.cacheDescriptors() || c.pipeline() || c.stageRecord());
    assertTrue(c.requireFullCoverage());
    assertEquals(0.5, c.coverageFloor());
    assertEquals(RefitRecords.Level.INFO, c.stageRecordLevel());
    assertEquals(400.0, c.maxGbps());
    assertEquals(Fp8Rounding.DEEPGEMM, c.fp8Rounding());
    // Without the map, the environment decides.
    ReceiverContext fromEnv = ReceiverContext.conclude(ReceiverConfig.defaults(), env, false);
    assertEquals(OptionalLong.of(1L << 30), fromEnv.stagingBytes());
    assertTrue(fromEnv.pipeline());
    assertEquals(Fp8Rounding.EXACT, fromEnv.fp8Rounding());
    assertEquals(Fp8Rounding.EXACT, ReceiverContext.fp8Rounding(env));
    // A budget set on the config wins over the environment.
    assertEquals(
        OptionalLong.of(4096),
        ReceiverContext.conclude(ReceiverConfig.defaults().withStagingBytes(4096), env, false)
            .stagingBytes());
  }

  @Test
  void anUnknownKeyNamesTheClosestSettingAndABadValueNamesItsSetting() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class, () -> of(Map.of("mx.receiver.staging-byte", "64m")));
    assertTrue(e.getMessage().contains("did you mean 'mx.receiver.staging-bytes'"), e.getMessage());
    e =
        assertThrows(
            IllegalArgumentException.class, () -> of(Map.of("mx.reshard.batch-instal", "1")));
    assertTrue(e.getMessage().contains("did you mean 'mx.reshard.batch-install'"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> of(Map.of("mx.refit.colour", "red")));
    assertFalse(e.getMessage().contains("did you mean"), e.getMessage());
    assertTrue(e.getMessage().contains("known settings: mx.receiver.wire"), e.getMessage());
    for (String[] bad :
        new String[][] {
          {"mx.receiver.staging-bytes", "0"},
          {"mx.receiver.staging-bytes", "lots"},
          {"mx.receiver.landing-bytes", "-1"},
          {"mx.reshard.max-segments-per-copy", "many"},
          {"mx.reshard.batch-install", "maybe"},
          {"mx.reshard.max-gbps", "fast"},
          {"mx.refit.stage-record-level", "loud"},
          {"mx.refit.fp8-rounding", "nearest"}
        }) {
      IllegalArgumentException x =
          assertThrows(IllegalArgumentException.class, () -> of(Map.of(bad[0], bad[1])), bad[0]);
      assertTrue(x.getMessage().contains(bad[0]), x.getMessage());
    }
  }

  @Test
  void keysAreCheckedAgainstEachOther() {
    IllegalArgumentException inPlace =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ReceiverContext.fromProperties(
                    Map.of("mx.receiver.double-buffer", "true"), NONE, true));
    assertTrue(inPlace.getMessage().contains("mx.receiver.double-buffer"), inPlace.getMessage());
    assertTrue(of(Map.of("mx.receiver.double-buffer", "true")).config().doubleBuffer());

    IllegalArgumentException landing =
        assertThrows(
            IllegalArgumentException.class,
            () -> of(Map.of("mx.receiver.staging-bytes", "1m", "mx.receiver.landing-bytes", "2m")));
    assertTrue(
        landing.getMessage().contains("mx.receiver.landing-bytes=2097152")
            && landing.getMessage().contains("mx.receiver.staging-bytes=1048576"),
        landing.getMessage());
    // Either alone, or landing within staging, is fine.
    of(Map.of("mx.receiver.staging-bytes", "2m", "mx.receiver.landing-bytes", "2m"));
    of(Map.of("mx.receiver.landing-bytes", "1g"));

    // Strict verification plans staged: the bounding does not apply, so any bounding is accepted.
    assertEquals(
        BoundingMode.MODELEXPRESS,
        of(Map.of("mx.receiver.verify", "strict", "mx.receiver.bounding", "modelexpress"))
            .config()
            .bounding());

    // The floor's range matters only when the gate is on.
    of(Map.of("mx.reshard.coverage-floor", "7"));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            of(
                Map.of(
                    "mx.reshard.require-full-coverage", "on", "mx.reshard.coverage-floor", "1.5")));
  }

  @Test
  void aReceiverIsBuiltFromItsConcludedContext() {
    try (Harness h = new Harness();
        Receiver r =
            h.builder(Map.of("MX_RECEIVER_STAGING_BYTES", "2m", "MX_REFIT_PIPELINE", "0"))
                .stagingBytes(1 << 20)
                .build()) {
      assertEquals(OptionalLong.of(1 << 20), r.context().stagingBytes());
      assertFalse(r.context().pipeline());
      r.updateWeights(1);
      assertEquals(1 << 20, r.stagingBudget());
    }
  }

  @Test
  void aReservationIsSizedFromTheStagingSettingAloneBeforeAnyReceiverExists() {
    Settings env =
        Settings.of(
            Map.of(),
            Map.of("MX_RECEIVER_STAGING_BYTES", "32m", "MX_REFIT_STAGE_RECORD_LEVEL", "loud"));
    assertEquals(32L << 20, dev.mx.refit.stage.StagingWaves.configured(env));
    assertEquals(-1L, dev.mx.refit.stage.StagingWaves.configured(NONE));
    assertEquals(
        -1L,
        dev.mx.refit.stage.StagingWaves.configured(
            Settings.of(Map.of(), Map.of("MX_RECEIVER_STAGING_BYTES", "auto"))));
    // A receiver concludes every setting, so there the bad level is refused, named.
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> ReceiverContext.conclude(ReceiverConfig.defaults(), env, false));
    assertTrue(e.getMessage().contains("MX_REFIT_STAGE_RECORD_LEVEL"), e.getMessage());
  }
}
