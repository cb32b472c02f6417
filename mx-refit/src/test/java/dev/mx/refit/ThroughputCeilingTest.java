package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.ImpossibleThroughputException;
import dev.mx.api.util.Settings;
import dev.mx.refit.wire.WireStages;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** ModelExpress (ARCHITECTURE §7.4) step 3, with the numbers of ModelExpress' ceiling test. */
class ThroughputCeilingTest {
  private static final long OBSERVED_BYTES = 40_611_246_080L;
  private static final double OBSERVED_WIRE_S = 0.839641;
  private static final double FOUR_ADAPTERS = 381.6;
  private static final double TWO_ADAPTERS = 190.8;

  private static Settings ceiling(String value) {
    return Settings.of(Map.of(), Map.of("MX_RESHARD_MAX_GBPS", value));
  }

  /** The ceiling a receiver concludes from these settings. */
  private static double ceilingGbps(Settings s) {
    return ReceiverContext.conclude(ReceiverConfig.defaults(), s, false).maxGbps();
  }

  private static void check(
      Settings s, CapturingRecords r, long bytes, Map<String, Double> stages) {
    ThroughputCeiling.check(ceilingGbps(s), r, 5, 11, bytes, stages);
  }

  @Test
  void anImpossibleRateIsRejectedUnderBothCeilingsWithTheRecordFirst() {
    for (double c : new double[] {FOUR_ADAPTERS, TWO_ADAPTERS}) {
      CapturingRecords records = new CapturingRecords();
      ImpossibleThroughputException e =
          assertThrows(
              ImpossibleThroughputException.class,
              () ->
                  check(
                      ceiling(Double.toString(c)),
                      records,
                      OBSERVED_BYTES,
                      Map.of(WireStages.FUSED, OBSERVED_WIRE_S)));
      assertEquals(386.9, Math.round(e.impliedGbps() * 10) / 10.0);
      assertEquals(5, e.rank());
      assertTrue(
          e.getMessage().contains("rank 5") && e.getMessage().contains("failed, not fast"),
          e.getMessage());
      Map<String, Object> rec = records.tagged(ThroughputCeiling.TAG).get(0).record();
      assertEquals("refit-impossible-throughput-v1", rec.get("schema"));
      assertEquals(OBSERVED_BYTES, rec.get("wire_bytes"));
      assertEquals(0.839641, rec.get("wire_s"));
      assertEquals(386.9, rec.get("implied_gbps"));
      assertEquals(c, rec.get("ceiling_gbps"));
      assertEquals(11L, rec.get("step"));
    }
  }

  @Test
  void aGenuineRunPassesAndEqualityIsAllowed() {
    CapturingRecords records = new CapturingRecords();
    check(ceiling("381.6"), records, OBSERVED_BYTES, Map.of(WireStages.FUSED, 1.273));
    check(ceiling("1"), records, 125_000_000L, Map.of(WireStages.FUSED, 1.0)); // exactly 1 Gbps
    assertTrue(records.entries.isEmpty());
  }

  @Test
  void offByDefaultAndNonFiniteDisablesWhileGarbageFailsNamingTheSetting() {
    Map<String, Double> wire = Map.of(WireStages.FUSED, OBSERVED_WIRE_S);
    check(Settings.of(Map.of(), Map.of()), new CapturingRecords(), OBSERVED_BYTES, wire);
    for (String v : new String[] {"NaN", "Infinity", "-Infinity", "0", "-3"}) {
      check(ceiling(v), new CapturingRecords(), OBSERVED_BYTES, wire);
      assertEquals(0.0, ceilingGbps(ceiling(v)), v);
    }
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> ceilingGbps(ceiling("fast")));
    assertTrue(e.getMessage().startsWith("MX_RESHARD_MAX_GBPS='fast'"), e.getMessage());
  }

  @Test
  void phasedStagesAreSummedAndZeroWireTimeOrBytesSkip() {
    Map<String, Double> phased =
        Map.of(WireStages.EXACT, 0.3, WireStages.FULL, 0.3, WireStages.CONVERT, 0.239641);
    assertThrows(
        ImpossibleThroughputException.class,
        () -> check(ceiling("381.6"), new CapturingRecords(), OBSERVED_BYTES, phased));
    check(ceiling("381.6"), new CapturingRecords(), OBSERVED_BYTES, Map.of());
    check(ceiling("381.6"), new CapturingRecords(), OBSERVED_BYTES, Map.of(WireStages.FUSED, 0.0));
    check(ceiling("381.6"), new CapturingRecords(), 0, Map.of(WireStages.FUSED, 1e-9));
    assertEquals(0.839641, WireStages.wireSeconds(phased), 1e-12);
  }
}
