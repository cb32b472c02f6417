package dev.mx.refit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.error.UnsupportedReshardException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * ModelExpress (ARCHITECTURE §7.4): the coverage record from engine parameter bytes and the
 * optional gate.
 */
class CoverageTest {
  private static final TransferPlan EMPTY_PLAN =
      new TransferPlan(List.of(), List.of(), List.of(), List.of(), List.of(), 0, 0, Map.of());

  private static RecordedCopy copyInto(String param, Shape shape, DType dtype) {
    return RecordedCopy.contiguous("src." + param, List.of(), param, 0, shape, dtype);
  }

  private static Map<String, ParamSpec> layout(Object... nameShapeDtype) {
    Map<String, ParamSpec> m = new LinkedHashMap<>();
    for (int i = 0; i < nameShapeDtype.length; i += 3) {
      m.put(
          (String) nameShapeDtype[i],
          new ParamSpec((Shape) nameShapeDtype[i + 1], (DType) nameShapeDtype[i + 2]));
    }
    return m;
  }

  @Test
  void fullCoverageIsCompleteAndLoggedAtInfoWithExactlyTheRecordFields() {
    var layout = layout("a", Shape.of(4), DType.F32, "b", Shape.of(2, 2), DType.F32);
    Coverage c =
        Coverage.of(
            1,
            CaptureResult.of(
                List.of(
                    copyInto("a", Shape.of(4), DType.F32),
                    copyInto("b", Shape.of(2, 2), DType.F32))),
            layout,
            EMPTY_PLAN);
    assertEquals(
        List.of(
            "schema",
            "rank",
            "params_installed",
            "engine_params",
            "dest_bytes",
            "engine_bytes",
            "coverage_pct",
            "params_never_written",
            "params_never_written_sample",
            "copies_captured",
            "unsupported",
            "unsupported_sample",
            "unsupported_causes",
            "planned_wire_bytes",
            "extra_wire_bytes",
            "descriptors",
            "descriptor_savings",
            "full_pull_sources",
            "unbounded_sources",
            "converts",
            "fallback"),
        new ArrayList<>(c.record().keySet()));
    assertEquals("refit-coverage-v1", c.record().get("schema"));
    assertEquals(100.0, c.record().get("coverage_pct"));
    assertEquals(32L, c.record().get("engine_bytes"));
    assertTrue(c.complete());
    CapturingRecords records = new CapturingRecords();
    c.emit(records);
    assertEquals(RefitRecords.Level.DEBUG, records.entries.get(0).level());
    assertEquals(Coverage.TAG, records.entries.get(0).tag());
  }

  @Test
  void coverageCountsBytesNotParamsAndHonoursDtypeWidths() {
    // One big f32 param written, one small bf16 param missed: 1 of 2 params but 64 of 72 bytes.
    var layout = layout("big", Shape.of(16), DType.F32, "small", Shape.of(4), DType.BF16);
    Coverage c =
        Coverage.of(
            0,
            CaptureResult.of(List.of(copyInto("big", Shape.of(16), DType.F32))),
            layout,
            EMPTY_PLAN);
    assertEquals(64L, c.record().get("dest_bytes"));
    assertEquals(72L, c.record().get("engine_bytes"));
    assertEquals(88.8889, c.record().get("coverage_pct"));
    assertEquals(1, c.record().get("params_never_written"));
    assertEquals(List.of("small"), c.record().get("params_never_written_sample"));
    assertFalse(c.complete());
    CapturingRecords records = new CapturingRecords();
    c.emit(records);
    assertEquals(RefitRecords.Level.WARNING, records.entries.get(0).level());
  }

  @Test
  void halfAModelIsAboutFiftyPercentAndUnsupportedSourcesAreSampledAndGrouped() {
    Map<String, ParamSpec> layout = new LinkedHashMap<>();
    List<RecordedCopy> copies = new ArrayList<>();
    List<String> unsupported = new ArrayList<>();
    Map<String, String> reasons = new LinkedHashMap<>();
    for (int i = 0; i < 24; i++) {
      layout.put("p" + i, new ParamSpec(Shape.of(8), DType.BF16));
      if (i % 2 == 0) {
        copies.add(copyInto("p" + i, Shape.of(8), DType.BF16));
      } else {
        unsupported.add("src.p" + i);
        reasons.put("src.p" + i, "unsupported op 'mul' on lazy 'src.p" + i + "' (chain=[mul(2)])");
      }
    }
    Coverage c =
        Coverage.of(0, new CaptureResult(copies, unsupported, 0, reasons), layout, EMPTY_PLAN);
    assertEquals(50.0, c.record().get("coverage_pct"));
    assertEquals(12, c.record().get("unsupported"));
    assertEquals(10, ((List<?>) c.record().get("unsupported_sample")).size());
    assertEquals(
        List.of(Map.of("cause", "unsupported op 'mul'", "sources", 12)),
        c.record().get("unsupported_causes"));
  }

  /** The context a receiver would conclude over this environment. */
  private static ReceiverContext context(Map<String, String> properties, Map<String, String> env) {
    return ReceiverContext.conclude(ReceiverConfig.defaults(), Settings.of(properties, env), false);
  }

  @Test
  void gateIsOffByDefaultAndRaisesIncompleteRefitBelowTheFloor() {
    var layout = layout("a", Shape.of(4), DType.F32, "b", Shape.of(4), DType.F32);
    Coverage half =
        Coverage.of(
            0,
            CaptureResult.of(List.of(copyInto("a", Shape.of(4), DType.F32))),
            layout,
            EMPTY_PLAN);
    half.gate(context(Map.of(), Map.of()));
    IncompleteRefitException e =
        assertThrows(
            IncompleteRefitException.class,
            () -> half.gate(context(Map.of(), Map.of("MX_RESHARD_REQUIRE_FULL_COVERAGE", "1"))));
    assertFalse(
        UnsupportedReshardException.class.isAssignableFrom(e.getClass()),
        "not an unsupported reshard");
    assertEquals(List.of("b"), e.missing());
    assertTrue(e.getMessage().contains("16 of 32 bytes"), e.getMessage());
    // At the floor passes; the floor must lie in [0, 1] only when the gate is on (checked when
    // the context is concluded).
    half.gate(
        context(
            Map.of(),
            Map.of("MX_RESHARD_REQUIRE_FULL_COVERAGE", "yes", "MX_RESHARD_COVERAGE_FLOOR", "0.5")));
    half.gate(context(Map.of(), Map.of("MX_RESHARD_COVERAGE_FLOOR", "7")));
    assertThrows(
        IllegalArgumentException.class,
        () ->
            half.gate(
                context(
                    Map.of(),
                    Map.of(
                        "MX_RESHARD_REQUIRE_FULL_COVERAGE",
                        "on",
                        "MX_RESHARD_COVERAGE_FLOOR",
                        "1.5"))));
  }

  @Test
  void noParamsMeansZeroCoverageWithoutDividingByZero() {
    Coverage c = Coverage.of(0, CaptureResult.of(List.of()), Map.of(), EMPTY_PLAN);
    assertEquals(0.0, c.coverage());
    assertEquals(0.0, c.record().get("coverage_pct"));
    assertThrows(
        IncompleteRefitException.class,
        () -> c.gate(context(Map.of(), Map.of("MX_RESHARD_REQUIRE_FULL_COVERAGE", "true"))));
  }

  @Test
  void planEconomicsAreInTheRecord() {
    try (Harness h = new Harness()) {
      Coverage c =
          Coverage.of(0, h.seed.capture.result(), h.seed.capture.paramLayout(), h.seed.plan);
      assertEquals(104L, c.record().get("planned_wire_bytes"));
      assertEquals(72L, c.record().get("extra_wire_bytes"));
      assertEquals(3L, c.record().get("descriptors"));
      assertEquals(1, c.record().get("full_pull_sources"));
      assertEquals(1, c.record().get("converts"));
      assertEquals(0, c.record().get("fallback"));
    }
  }
}
