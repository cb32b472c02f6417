package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.SettingDeclaration;
import dev.mx.plan.PlanSetting;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Every setting a receiver reads, declared once: its system property, its environment variable (or
 * none), its type, its default as a user would write it, and what it means. {@link ReceiverContext}
 * reads and checks them, {@link ReceiverConfig} holds the {@code mx.receiver.*} ones, and {@code
 * docs/SETTINGS.md} is generated from this list (ModelExpress's names where ModelExpress has the
 * setting; ARCHITECTURE §7.8).
 */
@Stable
public enum ReceiverSetting implements SettingDeclaration {
  WIRE(
      "mx.receiver.wire",
      null,
      "fused | phased | class",
      "fused",
      "How each batch of reads goes to the transport: as one call (fused), as up to three calls"
          + " for its exact, full-pull and convert reads (phased), or through the WirePolicy class"
          + " named (public no-argument constructor). When unset, follows mx.reshard.fused-wire."),
  VERIFY(
      "mx.receiver.verify",
      null,
      "all | strict | whole-shards | off",
      "all",
      "How much is verified against the publishers' digests before anything is installed."),
  RANK(
      "mx.receiver.rank",
      null,
      "int >= 0",
      "0",
      "This receiver's rank, named in records and errors."),
  TIMEOUT_SECONDS(
      "mx.receiver.timeout-seconds",
      null,
      "seconds > 0",
      "1200",
      "The per-read transport timeout, also given to discovery."),
  DOUBLE_BUFFER(
      "mx.receiver.double-buffer",
      null,
      "bool",
      "false",
      "Two sets of receive buffers used alternately, so buffers handed to the installer are never"
          + " written by the next refit. Not with an in-place receiver."),
  THREADS(
      "mx.receiver.threads",
      null,
      "int >= 0",
      "0",
      "Workers for batched re-slice, casts and digests; 0 = one per available core."),
  BOUNDING(
      "mx.receiver.bounding",
      "MX_RESHARD_BOUNDING",
      "shard | modelexpress",
      "shard",
      "How the planner bounds descriptor-heavy sources: shard staging chosen by cost per source, or"
          + " ModelExpress's whole-source full pull (ARCHITECTURE §7.3). Does not apply to strict"
          + " verification, which plans every source staged."),
  STAGING_BYTES(
      "mx.receiver.staging-bytes",
      "MX_RECEIVER_STAGING_BYTES",
      "bytes (64m, 1g) | auto",
      "auto",
      "The staging budget: staged shards beyond it go in later waves of the same refit. auto = 64"
          + " MiB, or what the largest staged unit needs when that is more; a set budget that cannot"
          + " hold the largest unit fails the prepare naming it."),
  LANDING_BYTES(
      "mx.receiver.landing-bytes",
      "MX_RECEIVER_LANDING_BYTES",
      "bytes >= 0",
      "8m",
      "Bytes per landing batch of one peer's reads: each batch's digests start while the next is on"
          + " the wire. 0 = one batch per peer. Not larger than a set staging budget."),
  LANDING_DIGEST(
      "mx.refit.landing-digest",
      "MX_REFIT_LANDING_DIGEST",
      "worker | wire",
      "worker",
      "Where the digest of bytes a DMA transport landed (one that does not fold) runs: on a worker"
          + " while the next batch is on the wire (worker), or on the wire thread right after its"
          + " batch landed, still in cache, with no second thread (wire; pair it with a"
          + " cache-sized mx.receiver.landing-bytes such as 1m)."),
  /** The planner's declaration: the receiver hands its value to the planner. */
  MAX_SEGMENTS_PER_COPY(PlanSetting.MAX_SEGMENTS_PER_COPY),
  FUSED_WIRE(
      "mx.reshard.fused-wire",
      "MX_RESHARD_FUSED_WIRE",
      "bool",
      "true",
      "The wire policy when mx.receiver.wire is unset: fused (true) or phased (false)."),
  BATCH_INSTALL(
      "mx.reshard.batch-install",
      "MX_RESHARD_BATCH_INSTALL",
      "bool",
      "true",
      "Re-slice and cast copies in parallel when their destinations are provably disjoint."),
  CACHE_DESCRIPTORS(
      "mx.reshard.cache-descriptors",
      "MX_RESHARD_CACHE_DESCRIPTORS",
      "bool",
      "true",
      "Reuse each buffer set's descriptor lists across steps while the plan is unchanged."),
  REQUIRE_FULL_COVERAGE(
      "mx.reshard.require-full-coverage",
      "MX_RESHARD_REQUIRE_FULL_COVERAGE",
      "bool",
      "false",
      "Turn on the coverage gate: a plan writing less than the floor of the engine's bytes fails."),
  COVERAGE_FLOOR(
      "mx.reshard.coverage-floor",
      "MX_RESHARD_COVERAGE_FLOOR",
      "fraction in [0, 1]",
      "0.995",
      "The coverage gate's floor (checked only when the gate is on)."),
  STAGE_RECORD(
      "mx.refit.stage-record",
      "MX_REFIT_STAGE_RECORD",
      "bool",
      "true",
      "Emit the refit-stage-v2 record after every refit."),
  STAGE_RECORD_LEVEL(
      "mx.refit.stage-record-level",
      "MX_REFIT_STAGE_RECORD_LEVEL",
      "debug | info",
      "debug",
      "The stage record's log level: debug (one line per refit only when asked) or info (operators'"
          + " log pipelines)."),
  PIPELINE(
      "mx.refit.pipeline",
      "MX_REFIT_PIPELINE",
      "bool",
      "true",
      "Overlap each peer's verification and staged copies with the rest of the wire (needs worker"
          + " threads)."),
  MAX_GBPS(
      "mx.reshard.max-gbps",
      "MX_RESHARD_MAX_GBPS",
      "Gbps >= 0",
      "0",
      "Per-rank throughput ceiling: a refit whose wire implies more fails before install. 0 = off;"
          + " a value that is not finite turns it off with a warning."),
  FP8_ROUNDING(
      "mx.refit.fp8-rounding",
      "MX_REFIT_FP8_ROUNDING",
      "exact | vllm | deepgemm",
      "vllm",
      "How a quantizing install computes each block's factor from its amax: vllm = x * (1 /"
          + " (amax / 448)), vLLM's per_block_cast_to_fp8; deepgemm = x * ((1 / amax) * 448);"
          + " exact = x * (448 / amax), correctly rounded; every operation in f32.");

  /** The prefix of the keys {@link ReceiverConfig} holds. */
  static final String RECEIVER_PREFIX = "mx.receiver.";

  private final Declared declared;

  ReceiverSetting(SettingDeclaration declaredElsewhere) {
    this.declared = declaredElsewhere.declared();
  }

  ReceiverSetting(String property, String env, String type, String defaultValue, String meaning) {
    this.declared = new Declared(property, env, type, defaultValue, meaning);
  }

  @Override
  public Declared declared() {
    return declared;
  }

  /** The name an error shows: the property, and the environment variable when there is one. */
  String names() {
    return env() == null ? property() : property() + " / " + env();
  }

  /** Every property name, in declaration order. */
  static List<String> properties() {
    List<String> out = new ArrayList<>();
    for (ReceiverSetting s : values()) {
      out.add(s.property());
    }
    return List.copyOf(out);
  }

  /** The declaration of a property name, or null. */
  static ReceiverSetting byProperty(String property) {
    for (ReceiverSetting s : values()) {
      if (s.property().equals(property)) {
        return s;
      }
    }
    return null;
  }

  /**
   * {@code " (did you mean 'K'?)"} for the known name closest to {@code key}, or empty when none is
   * close.
   */
  static String suggestion(String key, List<String> known) {
    String best = null;
    int bestDistance = Integer.MAX_VALUE;
    for (String k : known) {
      int d = editDistance(key.toLowerCase(Locale.ROOT), k);
      if (d < bestDistance) {
        bestDistance = d;
        best = k;
      }
    }
    return bestDistance <= Math.max(3, key.length() / 3) ? " (did you mean '" + best + "'?)" : "";
  }

  private static int editDistance(String a, String b) {
    int[] prev = new int[b.length() + 1];
    int[] cur = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + cost);
      }
      int[] t = prev;
      prev = cur;
      cur = t;
    }
    return prev[b.length()];
  }
}
