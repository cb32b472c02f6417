package dev.mx.refit;

import dev.mx.api.annotation.Internal;
import dev.mx.api.error.ImpossibleThroughputException;
import dev.mx.refit.wire.WireStages;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The throughput-ceiling gate (ModelExpress; ARCHITECTURE §7.4 step 3): a wire that reports more
 * bits per second than the adapters can carry delivered nothing, however fast it looks. {@code
 * MX_RESHARD_MAX_GBPS} is off by default (0); NaN and infinity turn it off with a warning, an
 * unparseable value fails naming it; equality passes.
 */
@Internal
public final class ThroughputCeiling {
  /** Tag of the record logged before the gate throws. */
  public static final String TAG = "MX_REFIT_IMPOSSIBLE_THROUGHPUT";

  public static final String SCHEMA = "refit-impossible-throughput-v1";

  private ThroughputCeiling() {}

  /**
   * Checks one refit against {@code ceiling} Gbps ({@link ReceiverContext#maxGbps()}, 0: off)'s
   * wire. Skipped when the ceiling is off, no bytes moved, or no wire time was recorded. Otherwise,
   * when {@code bytes·8 / wire_s / 1e9} exceeds the ceiling, emits the {@value #TAG} record
   * (WARNING) and throws.
   *
   * @throws ImpossibleThroughputException naming rank, step, bytes, time and both rates
   */
  public static void check(
      double ceiling,
      RefitRecords records,
      int rank,
      long step,
      long bytes,
      Map<String, Double> wireStages) {
    if (ceiling <= 0 || bytes <= 0) {
      return;
    }
    double wireS = WireStages.wireSeconds(wireStages);
    if (!(wireS > 0)) {
      return;
    }
    double implied = bytes * 8.0 / wireS / 1e9;
    if (implied > ceiling) {
      Map<String, Object> r = new LinkedHashMap<>();
      r.put("schema", SCHEMA);
      r.put("rank", rank);
      r.put("step", step);
      r.put("wire_bytes", bytes);
      r.put("wire_s", Rounding.round(wireS, 6));
      r.put("implied_gbps", Rounding.round(implied, 1));
      r.put("ceiling_gbps", ceiling);
      records.emit(RefitRecords.Level.WARNING, TAG, r);
      throw new ImpossibleThroughputException(rank, step, bytes, wireS, implied, ceiling);
    }
  }
}
