package dev.mx.refit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.ParamSpec;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.UnsupportedCause;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The coverage record and gate (ModelExpress; ARCHITECTURE §7.4), computed from engine parameter
 * bytes before any fallback rejection. A parameter counts as covered when at least one copy writes
 * it (per parameter, not per element).
 *
 * @param record the {@code refit-coverage-v1} fields, in order
 * @param coverage destination bytes / engine bytes (0 when the engine has no bytes)
 * @param complete no parameter missed, nothing unsupported, no fallback
 * @param missing parameters of the engine layout no copy writes, sorted
 */
@Internal
public record Coverage(
    Map<String, Object> record,
    double coverage,
    boolean complete,
    List<String> missing,
    long destBytes,
    long engineBytes) {
  /** Tag of the log line. */
  public static final String TAG = "MX_REFIT_COVERAGE";

  public static final String SCHEMA = "refit-coverage-v1";
  private static final int SAMPLE = 10;

  /** Computes the record for a capture and its plan. */
  public static Coverage of(
      int rank, CaptureResult capture, Map<String, ParamSpec> paramLayout, TransferPlan plan) {
    Set<String> installed = new TreeSet<>();
    for (RecordedCopy c : capture.copies()) {
      installed.add(c.paramName());
    }
    long engineBytes = 0;
    long destBytes = 0;
    List<String> missed = new ArrayList<>();
    for (Map.Entry<String, ParamSpec> e : paramLayout.entrySet()) {
      long b = e.getValue().byteSize();
      engineBytes += b;
      if (installed.contains(e.getKey())) {
        destBytes += b;
      } else {
        missed.add(e.getKey());
      }
    }
    missed.sort(null);
    double coverage = engineBytes == 0 ? 0.0 : (double) destBytes / engineBytes;
    List<String> unsupportedSample = new ArrayList<>();
    for (String name :
        capture.unsupported().subList(0, Math.min(SAMPLE, capture.unsupported().size()))) {
      unsupportedSample.add(truncate(name, 120));
    }
    List<Map<String, Object>> causes = new ArrayList<>();
    for (UnsupportedCause c :
        ReshardPlanner.summarizeUnsupported(capture.unsupportedReasons(), SAMPLE)) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("cause", truncate(c.cause(), 200));
      m.put("sources", c.count());
      causes.add(m);
    }
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("schema", SCHEMA);
    r.put("rank", rank);
    r.put("params_installed", installed.size());
    r.put("engine_params", paramLayout.size());
    r.put("dest_bytes", destBytes);
    r.put("engine_bytes", engineBytes);
    r.put("coverage_pct", Rounding.round(100.0 * coverage, 4));
    r.put("params_never_written", missed.size());
    r.put(
        "params_never_written_sample",
        List.copyOf(missed.subList(0, Math.min(SAMPLE, missed.size()))));
    r.put("copies_captured", capture.copies().size());
    r.put("unsupported", capture.unsupported().size());
    r.put("unsupported_sample", unsupportedSample);
    r.put("unsupported_causes", causes);
    r.put("planned_wire_bytes", plan.bytesPlanned());
    r.put("extra_wire_bytes", plan.extraWireBytes());
    r.put("descriptors", plan.descriptorCount());
    r.put("descriptor_savings", plan.descriptorSavings());
    r.put("full_pull_sources", plan.fullPulls().size());
    r.put("unbounded_sources", plan.unboundedSources().size());
    r.put("converts", plan.converts().size());
    r.put("fallback", plan.fallback().size());
    boolean complete =
        missed.isEmpty() && capture.unsupported().isEmpty() && plan.fallback().isEmpty();
    return new Coverage(
        java.util.Collections.unmodifiableMap(r),
        coverage,
        complete,
        List.copyOf(missed),
        destBytes,
        engineBytes);
  }

  /** Emits the record: INFO when complete, WARNING otherwise. */
  public void emit(RefitRecords records) {
    // Complete coverage is routine: its record is for collectors (DEBUG), not a line at INFO.
    records.emit(complete ? RefitRecords.Level.DEBUG : RefitRecords.Level.WARNING, TAG, record);
  }

  /**
   * The gate: off unless {@code MX_RESHARD_REQUIRE_FULL_COVERAGE}; then coverage must reach the
   * floor ({@code MX_RESHARD_COVERAGE_FLOOR}, default 0.995; its range is checked when the context
   * is concluded).
   *
   * @throws IncompleteRefitException naming the byte shortfall and up to five missing parameters
   */
  public void gate(ReceiverContext context) {
    if (!context.requireFullCoverage()) {
      return;
    }
    double floor = context.coverageFloor();
    if (coverage < floor) {
      List<String> sample = missing.subList(0, Math.min(5, missing.size()));
      throw new IncompleteRefitException(
          String.format(
              Locale.ROOT,
              "refit would write %.4f%% of the engine's parameter bytes, below the floor of %.4f%% (%s): %d of %d bytes"
                  + " never written; %d parameter(s) never written, e.g. %s",
              100 * coverage,
              100 * floor,
              ReceiverSetting.COVERAGE_FLOOR.env(),
              engineBytes - destBytes,
              engineBytes,
              missing.size(),
              sample),
          sample);
    }
  }

  private static String truncate(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max);
  }
}
