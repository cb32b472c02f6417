package dev.mx.metadata.progress;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

/**
 * Where the heartbeat records of a model's parties live: in the publisher directory of the metadata
 * store, under identity {@code <model>#parties}, one record per party keyed by its party name (a
 * trainer rank's slot), its blob the party's label for messages ("rank slot 2 (worker trainer-2)").
 * Plain discovery of {@code <model>} never sees them.
 */
@Internal
public final class PartyRecords {
  /**
   * Listings keep every record however old its heartbeat (waiters judge by change, not by the
   * writer's clock); stores still forget records nobody heartbeated for their GC timeout.
   */
  private static final Duration ANY_AGE = Duration.ofDays(3650);

  private PartyRecords() {}

  /** The identity the parties of {@code model} heartbeat under. */
  public static String identity(String model) {
    return model + "#parties";
  }

  /** Every party record of {@code model} that is READY (not closed), with its label. */
  public static List<SourceRecord> list(MetadataStore store, String model) {
    return store.listReady(identity(model), ANY_AGE, true);
  }

  /** The party's label, or its name when it wrote none. */
  public static String label(SourceRecord r) {
    String label = new String(r.blob(), StandardCharsets.UTF_8);
    return label.isBlank() ? "party '" + r.workerId() + "'" : label;
  }

  /** A label as a record blob. */
  static byte[] blob(String label) {
    return label.getBytes(StandardCharsets.UTF_8);
  }
}
