package dev.mx.cli.demo;

import dev.mx.cli.Table;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Accumulates the per-step, per-rank rows and renders them as tables or JSON (ARCHITECTURE §5.7).
 */
final class DemoReport {
  final Map<String, Object> run;
  final List<Map<String, Object>> steps = new ArrayList<>();
  double baselineGbps;

  /** The command the header names ({@code mx receive} reuses this report). */
  String command = "mx demo";

  boolean ok = true;
  String error;
  long lastStep = -1;

  /**
   * After a failed in-place step: each receiver's live weights ({@code rank}, {@code state}: whole,
   * torn, exited or unknown, and {@code step}, the last step it installed whole).
   */
  final List<Map<String, Object>> liveWeights = new ArrayList<>();

  /**
   * What the failure left live: "installed weights are still step N" when every receiver is whole
   * on it, else each receiver's state.
   */
  String liveAfterFailure() {
    if (lastStep < 0) {
      return "";
    }
    boolean allOnLast =
        liveWeights.stream()
            .allMatch(
                w -> "whole".equals(w.get("state")) && num(w.get("step")).longValue() == lastStep);
    if (allOnLast) {
      return " (installed weights are still step " + lastStep + ")";
    }
    StringBuilder b = new StringBuilder(" (live weights:");
    for (Map<String, Object> w : liveWeights) {
      b.append(b.charAt(b.length() - 1) == ':' ? " " : ", ")
          .append("receiver ")
          .append(w.get("rank"));
      switch (String.valueOf(w.get("state"))) {
        case "torn" -> b.append(" TORN");
        case "whole" -> b.append(" step ").append(w.get("step"));
        default -> b.append(" ").append(w.get("state"));
      }
    }
    boolean torn = liveWeights.stream().anyMatch(w -> "torn".equals(w.get("state")));
    return b.append(
            torn
                ? "; torn weights are not dumped, the next successful step rewrites every byte)"
                : ")")
        .toString();
  }

  /**
   * With {@code --source checkpoint:DIR}: what each receiver installed from the checkpoint when it
   * started ({@code rank}, {@code dir}, {@code step}, {@code files}, {@code checkpoint_bytes},
   * {@code bytes_read}, {@code verified_shards}, {@code install_s}).
   */
  final List<Map<String, Object>> checkpoints = new ArrayList<>();

  /** Records receiver {@code rank}'s checkpoint install ({@code InferenceRank}'s start map). */
  void addCheckpoint(int rank, Map<?, ?> m) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("rank", rank);
    m.forEach((k, v) -> row.put(String.valueOf(k), v));
    checkpoints.add(row);
  }

  /** Bytes the receivers read from checkpoints. */
  long checkpointBytes() {
    long n = 0;
    for (Map<String, Object> c : checkpoints) {
      n += num(c.get("bytes_read")).longValue();
    }
    return n;
  }

  /** The run's memory ({@link MemoryWatch#report}); null until the run ended. */
  Map<String, Object> memory;

  /**
   * Bytes of the inference weights: what every rank installed in the first step (or from its
   * checkpoint), summed.
   */
  long weightBytes() {
    if (steps.isEmpty()) {
      return checkpoints.isEmpty() ? -1 : checkpointBytes();
    }
    Object first = steps.get(0).get("step");
    long n = 0;
    for (Map<String, Object> s : steps) {
      // One inference group's weights: the others hold copies of them.
      if (s.get("step").equals(first) && num(s.get("group")).intValue() == 0) {
        n += num(s.get("bytes")).longValue();
      }
    }
    return n;
  }

  DemoReport(Map<String, Object> run) {
    this.run = run;
  }

  void fail(String message) {
    if (ok) {
      ok = false;
      error = message;
    }
  }

  void addStep(int step, int rank, Map<String, Object> m) {
    addStep(step, -1, rank, m);
  }

  /**
   * Records a step of receiver {@code rank} of inference group {@code group} ({@code
   * --inference-groups}; -1 when the run has one group, and the row has no {@code group} key).
   */
  void addStep(int step, int group, int rank, Map<String, Object> m) {
    Map<String, Object> row = new LinkedHashMap<>();
    row.put("step", step);
    if (group >= 0) {
      row.put("group", group);
    }
    row.put("rank", rank);
    if (m.get("source") != null) {
      // Where this step was read from: trainer, or installed:group-G (--serve-installed).
      row.put("source", m.get("source"));
    }
    long bytes = num(m.get("bytes_received")).longValue();
    double wire = num(m.get("wire_s")).doubleValue();
    double gbps = wire > 0 ? bytes / wire / 1e9 : 0;
    row.put("bytes", bytes);
    row.put("descriptors", num(m.get("segments")).longValue());
    row.put("full_pulls", num(m.get("full_pull_sources")).longValue());
    row.put("converts", num(m.get("converts")).longValue());
    row.put("wire_s", wire);
    row.put("gbps", gbps);
    row.put("ratio_to_copy", baselineGbps > 0 ? gbps / baselineGbps : 0);
    row.put("e2e_s", num(m.get("e2e_s")).doubleValue());
    // Of e2e_s, the control plane: leasing the version and fetching and checking its tables.
    if (m.get("version_fetch_s") != null) {
      row.put("fetch_s", num(m.get("version_fetch_s")).doubleValue());
    }
    // The shard tables that step fetched: every slot's, or, after a step like it, those its plan
    // reads.
    if (m.get("version_tables_fetched") != null) {
      row.put("tables_fetched", num(m.get("version_tables_fetched")).longValue());
    }
    // Of e2e_s, with --install copy: copying (and casting or quantizing) the verified step in.
    if (m.get("install_s") != null) {
      row.put("install_s", num(m.get("install_s")).doubleValue());
    }
    // --serve-installed: publishing the installed step to the next group (digests of its bytes).
    if (m.get("serve_s") != null) {
      row.put("serve_s", num(m.get("serve_s")).doubleValue());
    }
    // Wall time from the previous step's commit (the run's start for step 0) to this one's.
    row.put("period_s", num(m.get("period_s")).doubleValue());
    // Whether the trainers began writing this step while the receivers still refitted the last.
    row.put("publish_overlapped", Boolean.TRUE.equals(m.get("publish_overlapped")));
    row.put("verified_shards", num(m.get("verified_shards")).longValue());
    row.put("unverifiable_shards", num(m.get("unverifiable_shards")).longValue());
    row.put("unverified_bytes", num(m.get("unverified_bytes")).longValue());
    row.put("sources_exact", num(m.get("sources_exact")).longValue());
    row.put("sources_staged", num(m.get("sources_staged")).longValue());
    row.put("sources_full_pull", num(m.get("sources_full_pull")).longValue());
    row.put("staged_shards", num(m.get("staged_shards")).longValue());
    row.put("coverage", num(m.get("coverage")).doubleValue());
    // Delta refits: tensors the publishers claimed unchanged since the held step, not read.
    row.put("tensors_skipped", num(m.get("delta_kept_sources")).longValue());
    row.put("bytes_skipped", num(m.get("delta_kept_bytes")).longValue());
    if (m.get("bytes_by_session") instanceof Map<?, ?> served) {
      Map<String, Long> bySession = new java.util.TreeMap<>();
      served.forEach((k, v) -> bySession.put(String.valueOf(k), num(v).longValue()));
      row.put("bytes_by_session", bySession);
    }
    for (String k : List.of("shm_mapped_bytes", "shm_attached_bytes")) {
      if (m.get(k) != null) {
        row.put(k, num(m.get(k)).longValue());
      }
    }
    // fp8-block: the install's quantization error against the pulled (verified) weights.
    for (String k : List.of("quant_max_abs_err", "quant_max_rel_err")) {
      if (m.get(k) != null) {
        row.put(k, num(m.get(k)).doubleValue());
      }
    }
    steps.add(row);
  }

  private static Number num(Object o) {
    return o instanceof Number n ? n : 0;
  }

  Map<String, Object> toJson() {
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("ok", ok);
    doc.put("error", error);
    Map<String, Object> r = new LinkedHashMap<>(run);
    r.put("last_step", lastStep);
    doc.put("run", r);
    doc.put("baseline_gbps", baselineGbps > 0 ? baselineGbps : null);
    doc.put("steps", steps);
    // After the contracted keys (ARCHITECTURE §5.7), which it extends: installed bytes no digest
    // covered.
    doc.put("unverified_bytes", unverifiedBytes());
    if (!checkpoints.isEmpty()) {
      doc.put("checkpoint", checkpoints);
    }
    if (!steps.isEmpty() || !checkpoints.isEmpty()) {
      // Which trainer ranks served the refits (replicas spread the reads): the balance goal.
      doc.put("bytes_served_per_trainer_rank", servedBytes());
      Map<String, Object> kinds = new LinkedHashMap<>();
      kinds.put("trainer", total(servedBytes()));
      Map<String, Long> installed = installedServedBytes();
      if (!installed.isEmpty()) {
        // --serve-installed: inference ranks that served what they installed to the next group.
        doc.put("bytes_served_per_installed_rank", installed);
        kinds.put("installed", total(installed));
      }
      if (!checkpoints.isEmpty()) {
        kinds.put("checkpoint", checkpointBytes());
      }
      doc.put("bytes_served_per_source_kind", kinds);
      doc.put("serving_balance", servingBalance());
    }
    if (!liveWeights.isEmpty()) {
      doc.put("live_weights", liveWeights);
    }
    if (memory != null) {
      // The demo's own: peak per process and in total (mx receive reports none).
      doc.put("memory", memory);
    }
    return doc;
  }

  /**
   * The trainer ranks in the job, for the mean bytes served (ranks that served nothing count); -1
   * when the run does not say (then the ranks that served are counted).
   */
  int trainerRanks = -1;

  /** Bytes each trainer session served over every step and receiver, by session name. */
  Map<String, Long> servedBytes() {
    return sessionBytes(true);
  }

  /**
   * Bytes each inference rank serving its installed weights ({@code --serve-installed}) served, by
   * session name.
   */
  Map<String, Long> installedServedBytes() {
    return sessionBytes(false);
  }

  /** Bytes served by the trainer sessions ({@code trainer-N}), or by every other session. */
  @SuppressWarnings("unchecked")
  private Map<String, Long> sessionBytes(boolean trainers) {
    Map<String, Long> served = new java.util.TreeMap<>();
    for (Map<String, Object> s : steps) {
      if (s.get("bytes_by_session") instanceof Map<?, ?> m) {
        ((Map<String, Long>) m)
            .forEach(
                (k, v) -> {
                  if (k.startsWith("trainer-") == trainers) {
                    served.merge(k, v, Long::sum);
                  }
                });
      }
    }
    return served;
  }

  private static long total(Map<String, Long> bytes) {
    return bytes.values().stream().mapToLong(Long::longValue).sum();
  }

  /**
   * The busiest serving rank's bytes against the mean over the job's trainer ranks: {@code
   * busiest_rank}, {@code busiest_bytes}, {@code mean_bytes}, {@code busiest_over_mean}, {@code
   * trainer_ranks}.
   */
  Map<String, Object> servingBalance() {
    Map<String, Long> served = servedBytes();
    int ranks = Math.max(trainerRanks, served.size());
    Map<String, Object> b = new LinkedHashMap<>();
    Map.Entry<String, Long> busiest =
        served.entrySet().stream().max(Map.Entry.comparingByValue()).orElse(null);
    double mean = ranks == 0 ? 0 : total(served) / (double) ranks;
    b.put("trainer_ranks", ranks);
    b.put("busiest_rank", busiest == null ? null : busiest.getKey());
    b.put("busiest_bytes", busiest == null ? 0L : busiest.getValue());
    b.put("mean_bytes", mean);
    b.put("busiest_over_mean", mean > 0 ? busiest.getValue() / mean : 0);
    return b;
  }

  /**
   * Installed bytes no digest covered, over every step and rank (0 unless verification was opted
   * out).
   */
  long unverifiedBytes() {
    long n = 0;
    for (Map<String, Object> s : steps) {
      n += ((Number) s.getOrDefault("unverified_bytes", 0L)).longValue();
    }
    return n;
  }

  void printTables(PrintWriter out) {
    out.println(
        command
            + ": "
            + run.get("model")
            + ", trainer "
            + run.get("trainer")
            + " -> inference "
            + run.get("inference")
            + ", "
            + run.get("trainer_dtype")
            + " -> "
            + run.get("inference_dtype")
            + ", transport "
            + run.get("transport")
            + ", wire "
            + run.get("wire"));
    if (baselineGbps > 0) {
      out.println(String.format(Locale.ROOT, "memory-copy baseline: %.2f GB/s", baselineGbps));
    }
    for (Map<String, Object> c : checkpoints) {
      out.println(
          String.format(
              Locale.ROOT,
              "checkpoint: receiver %s installed step %s from %s (%s file(s)): %d bytes read, %s"
                  + " shards verified, %.3f s",
              c.get("rank"),
              c.get("step"),
              c.get("dir"),
              c.get("files"),
              num(c.get("bytes_read")).longValue(),
              c.get("verified_shards"),
              num(c.get("install_s")).doubleValue()));
    }
    Table t =
        new Table(
            "STEP",
            "RANK",
            "BYTES",
            "DESCRIPTORS",
            "FULL PULLS",
            "CONVERTS",
            "WIRE S",
            "GB/S",
            "VS COPY",
            "E2E S",
            "SOURCES X/S/F",
            "VERIFIED SHARDS",
            "UNVERIFIED BYTES",
            "COVERAGE");
    long totalBytes = 0;
    double totalWire = 0;
    double totalE2e = 0;
    for (Map<String, Object> s : steps) {
      t.row(
          s.get("step"),
          s.get("group") == null ? s.get("rank") : "g" + s.get("group") + "/" + s.get("rank"),
          s.get("bytes"),
          s.get("descriptors"),
          s.get("full_pulls"),
          s.get("converts"),
          f("%.4f", s.get("wire_s")),
          f("%.2f", s.get("gbps")),
          f("%.3f", s.get("ratio_to_copy")),
          f("%.4f", s.get("e2e_s")),
          s.get("sources_exact") + "/" + s.get("sources_staged") + "/" + s.get("sources_full_pull"),
          s.get("verified_shards"),
          s.get("unverified_bytes"),
          f("%.2f%%", ((Number) s.get("coverage")).doubleValue() * 100));
      totalBytes += ((Number) s.get("bytes")).longValue();
      totalWire += ((Number) s.get("wire_s")).doubleValue();
      totalE2e += ((Number) s.get("e2e_s")).doubleValue();
    }
    t.print(out);
    if (!steps.isEmpty()) {
      double gbps = totalWire > 0 ? totalBytes / totalWire / 1e9 : 0;
      out.println(
          String.format(
              Locale.ROOT,
              "total: %d bytes over %d step-rank(s), wire %.4f s (%.2f GB/s, %.3f of memory copy), end-to-end %.4f s",
              totalBytes,
              steps.size(),
              totalWire,
              gbps,
              baselineGbps > 0 ? gbps / baselineGbps : 0,
              totalE2e));
    }
    printPeriods(out);
    printServing(out);
    long unverified = unverifiedBytes();
    String verified =
        unverified == 0
            ? ", every installed byte verified"
            : ", "
                + unverified
                + " installed byte(s) NOT verified (--verify "
                + run.get("verify")
                + ")";
    out.println("sources per step and rank: X exact, S shard-staged, F full-pulled");
    printMemory(out);
    out.println(
        ok
            ? "result: ok, last installed step " + lastStep + verified
            : "result: FAILED: " + error + liveAfterFailure());
    out.flush();
  }

  /**
   * The step period: wall time from one commit to the next (what a training loop waits per step),
   * each step once; with overlap the trainers write the next step while the receivers refit.
   */
  private void printPeriods(PrintWriter out) {
    StringBuilder b = new StringBuilder();
    Object seen = null;
    for (Map<String, Object> s : steps) {
      if (s.get("step").equals(seen)) {
        continue;
      }
      seen = s.get("step");
      b.append(b.isEmpty() ? "" : ", ")
          .append("step ")
          .append(seen)
          .append(' ')
          .append(f("%.3f s", s.get("period_s")));
    }
    if (!b.isEmpty()) {
      out.println(
          "step period (commit to commit; step 0 from the start, with planning): "
              + b
              + (Boolean.TRUE.equals(run.get("overlap"))
                  ? " (overlap: trainers write step N+1 while receivers refit step N)"
                  : " (no overlap)"));
    }
  }

  /** The busiest trainer rank's served bytes against the mean (replica spreading's balance). */
  private void printServing(PrintWriter out) {
    Map<String, Object> b = servingBalance();
    if (b.get("busiest_rank") == null) {
      return;
    }
    out.println(
        String.format(
            Locale.ROOT,
            "serving: busiest trainer rank %s served %d bytes, mean %.0f over %d rank(s)"
                + " (busiest/mean %.3f)",
            b.get("busiest_rank"),
            num(b.get("busiest_bytes")).longValue(),
            num(b.get("mean_bytes")).doubleValue(),
            num(b.get("trainer_ranks")).intValue(),
            num(b.get("busiest_over_mean")).doubleValue()));
  }

  /** Peak memory per process and in total, against the weights' bytes. */
  @SuppressWarnings("unchecked")
  private void printMemory(PrintWriter out) {
    if (memory == null || num(memory.get("peak_pss_bytes")).longValue() < 0) {
      return;
    }
    Table t = new Table("PROCESS", "PID", "PEAK RSS GB", "PEAK PSS GB");
    for (Map<String, Object> p : (List<Map<String, Object>>) memory.get("processes")) {
      t.row(
          p.get("name"),
          p.get("pid"),
          f("%.3f", num(p.get("peak_rss_bytes")).doubleValue() / 1e9),
          f("%.3f", num(p.get("peak_pss_bytes")).doubleValue() / 1e9));
    }
    t.print(out);
    long weights = num(memory.get("weight_bytes")).longValue();
    double peak = num(memory.get("peak_pss_bytes")).doubleValue() / 1e9;
    String pss = "the summed PSS of this run's processes, shared memory counted once";
    // No step installed: no weights to compare with (weight_bytes is then not a size).
    out.println(
        memory.get("peak_per_weight") instanceof Number r && weights >= 0
            ? String.format(
                Locale.ROOT,
                "memory: peak %.3f GB for %.3f GB of weights (%.2fx the weights; %s)",
                peak,
                weights / 1e9,
                r.doubleValue(),
                pss)
            : String.format(
                Locale.ROOT, "memory: peak %.3f GB, no weights installed (%s)", peak, pss));
  }

  private static String f(String fmt, Object v) {
    return String.format(Locale.ROOT, fmt, ((Number) v).doubleValue());
  }

  /** The step's metrics with the commit's install time added to its end-to-end time. */
  static Map<String, Object> withInstallTime(Map<String, Object> step, Map<String, Object> commit) {
    Map<String, Object> m = new LinkedHashMap<>(step);
    double e2e = step.get("e2e_s") instanceof Number n ? n.doubleValue() : 0;
    double install = commit.get("install_s") instanceof Number n ? n.doubleValue() : 0;
    m.put("e2e_s", e2e + install);
    m.put("install_s", install);
    commit.forEach(
        (k, v) -> {
          if (k.startsWith("quant_") || k.equals("serve_s")) {
            m.put(k, v);
          }
        });
    return m;
  }

  /**
   * GB/s of MemorySegment.copy over 256 MiB, the yardstick every step's wire rate is compared with.
   */
  static double memoryCopyGbps() {
    long size = 256L << 20;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment a = arena.allocate(size, 4096);
      MemorySegment b = arena.allocate(size, 4096);
      a.fill((byte) 1);
      b.fill((byte) 0);
      double best = Double.MAX_VALUE;
      for (int i = 0; i < 5; i++) {
        long t0 = System.nanoTime();
        MemorySegment.copy(a, 0, b, 0, size);
        best = Math.min(best, (System.nanoTime() - t0) / 1e9);
      }
      return size / best / 1e9;
    }
  }
}
