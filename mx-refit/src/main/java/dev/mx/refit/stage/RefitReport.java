package dev.mx.refit.stage;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.plan.TransferPlan;
import dev.mx.refit.RefitRecords;
import dev.mx.refit.Rounding;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The records stage: the metrics map {@code updateWeights} returns and the per-step stage record
 * ({@code refit-stage-v3}, at DEBUG unless {@code MX_REFIT_STAGE_RECORD_LEVEL=info}), both from one
 * set of counters.
 *
 * @param sourcesExact sources read only by exact (or convert) segments
 * @param sourcesStaged sources with at least one shard staged whole
 * @param sourcesFull sources pulled whole (ModelExpress full pulls)
 * @param verifiedShards shards whose digest matched this step (whole-shard checks plus staged
 *     shards)
 * @param unverifiableShards shards read without verification (opt-out modes only)
 * @param unverifiedBytes installed bytes that no digest covered (0 in the default mode)
 * @param bytesBySession bytes this step read from each publisher session (its serving trainer
 *     ranks, replicas included)
 */
@Internal
public record RefitReport(
    long step,
    long bytes,
    long segments,
    TransferPlan plan,
    int stagedShards,
    int sourcesExact,
    int sourcesStaged,
    int sourcesFull,
    long verifiedShards,
    long unverifiableShards,
    long unverifiedBytes,
    String verifyMode,
    long sourceStep,
    Map<String, Long> bytesBySession,
    Map<String, Double> stages) {

  /** Tag and schema of the per-step stage record. */
  public static final String STAGE_TAG = "MX_REFIT_STAGE";

  public static final String STAGE_SCHEMA = "refit-stage-v3";

  /** The metrics map: counters first, then every stage time in seconds (6 decimals). */
  public Map<String, Object> metrics() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("step", step);
    m.put("bytes_received", bytes);
    m.put("segments", segments);
    m.put("converts", (long) plan.converts().size());
    m.put("full_pull_sources", (long) plan.fullPulls().size());
    m.put("staged_shards", (long) stagedShards);
    m.put("sources_exact", (long) sourcesExact);
    m.put("sources_staged", (long) sourcesStaged);
    m.put("sources_full_pull", (long) sourcesFull);
    m.put("exact_descriptors", plan.exactDescriptorCount());
    m.put("descriptor_savings", Math.max(0, plan.exactDescriptorCount() - segments));
    m.put("extra_wire_bytes", Math.max(0, bytes - plan.exactBytes()));
    m.put("unbounded_sources", (long) plan.unboundedSources().size());
    m.put("fallback", (long) plan.fallback().size());
    m.put("verify", verifyMode);
    m.put("verified_shards", verifiedShards);
    m.put("unverifiable_shards", unverifiableShards);
    m.put("unverified_bytes", unverifiedBytes);
    if (sourceStep >= 0) {
      m.put("source_step", sourceStep);
    }
    m.put("bytes_by_session", Collections.unmodifiableMap(new java.util.TreeMap<>(bytesBySession)));
    for (Map.Entry<String, Double> e : stages.entrySet()) {
      m.put(e.getKey(), Rounding.round(e.getValue(), 6));
    }
    return Collections.unmodifiableMap(m);
  }

  /**
   * The stage record's level from the {@code MX_REFIT_STAGE_RECORD_LEVEL} setting's value ({@code
   * debug} or {@code info}).
   *
   * @throws IllegalArgumentException naming the setting for any other value
   */
  public static RefitRecords.Level stageLevel(String value) {
    return switch (value.trim().toLowerCase(Locale.ROOT)) {
      case "debug" -> RefitRecords.Level.DEBUG;
      case "info" -> RefitRecords.Level.INFO;
      default ->
          throw new IllegalArgumentException(
              "MX_REFIT_STAGE_RECORD_LEVEL (mx.refit.stage-record-level) must be debug or info,"
                  + " not '"
                  + value
                  + "'");
    };
  }

  /** Emits the stage record at {@code level}. */
  public void emit(
      RefitRecords records, RefitRecords.Level level, int rank, boolean fused, boolean batch) {
    Map<String, Object> r = new LinkedHashMap<>();
    r.put("schema", STAGE_SCHEMA);
    r.put("rank", rank);
    double accounted = 0;
    for (Map.Entry<String, Double> e : stages.entrySet()) {
      if (e.getKey().endsWith("_s")) {
        accounted += e.getValue();
      }
    }
    Map<String, Object> m = metrics();
    r.put("step", step);
    r.put("bytes", bytes);
    r.put("segments", segments);
    r.put("accounted_s", Rounding.round(accounted, 6));
    r.put("fused_wire", fused);
    r.put("batch_install", batch);
    m.forEach(
        (k, v) -> {
          if (!k.equals("step") && !k.equals("bytes_received") && !k.equals("segments")) {
            r.put(k, v);
          }
        });
    records.emit(level, STAGE_TAG, r);
  }

  /**
   * Tells {@code listener} about this installed step: every timed stage ({@code _s}), the digest
   * checks, the install and the outcome ({@code startedNanos}: when the refit began).
   */
  public void publish(RefitListener listener, RefitListener.Refit refit, long startedNanos) {
    for (Map.Entry<String, Double> e : stages.entrySet()) {
      if (e.getKey().endsWith("_s")) {
        listener.stageTimed(refit, e.getKey(), e.getValue());
      }
    }
    listener.shardsVerified(refit, verifiedShards, unverifiableShards);
    listener.installed(refit);
    listener.refitFinished(
        refit,
        new RefitListener.Outcome(
            true, bytes, segments, (System.nanoTime() - startedNanos) / 1e9, null));
  }

  /**
   * Tells {@code listener} that a refit failed: a verification failure first when {@code failure}
   * is one (or carries one as its cause or a suppressed exception), then the outcome.
   */
  public static void publishFailure(
      RefitListener listener, RefitListener.Refit refit, long startedNanos, Throwable failure) {
    publishFailure(listener, refit, startedNanos, failure, Map.of());
  }

  /**
   * As above, first telling {@code listener} the time of every stage the failed refit completed
   * ({@code stages}, as the receiver collected them: prepare, descriptors, wire ...), so that a
   * failed refit's time is accounted for like an installed one's.
   */
  public static void publishFailure(
      RefitListener listener,
      RefitListener.Refit refit,
      long startedNanos,
      Throwable failure,
      Map<String, Double> stages) {
    for (Map.Entry<String, Double> e : stages.entrySet()) {
      if (e.getKey().endsWith("_s")) {
        listener.stageTimed(refit, e.getKey(), e.getValue());
      }
    }
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (verificationFailure(listener, refit, t)) {
        break;
      }
      boolean found = false;
      for (Throwable s : t.getSuppressed()) {
        found |= verificationFailure(listener, refit, s);
      }
      if (found || t.getCause() == t) {
        break;
      }
    }
    listener.refitFinished(
        refit,
        new RefitListener.Outcome(
            false, 0, 0, (System.nanoTime() - startedNanos) / 1e9, failure.toString()));
  }

  private static boolean verificationFailure(
      RefitListener listener, RefitListener.Refit refit, Throwable t) {
    if (t instanceof DigestMismatchException d) {
      listener.verificationFailed(refit, d.source(), d.publisher(), d.getMessage());
      return true;
    }
    if (t instanceof UnverifiableShardException u) {
      listener.verificationFailed(refit, u.source(), u.publisher(), u.getMessage());
      return true;
    }
    return false;
  }
}
