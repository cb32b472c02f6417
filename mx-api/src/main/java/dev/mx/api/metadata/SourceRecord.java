package dev.mx.api.metadata;

import java.util.Objects;

/**
 * One publisher's entry in a store.
 *
 * @param identity what is published (model and role), the same string on both sides
 * @param workerId unique per publisher process
 * @param rank the publisher's rank, for reports
 * @param blob the shard table (JSON, UTF-8)
 * @param status liveness
 * @param updatedAtMillis last heartbeat (epoch millis); 0 until the first heartbeat
 * @param progress a counter the worker advances while it makes progress (docs/VERSIONS.md, "Waiting
 *     on liveness"); {@link #NO_PROGRESS} in a record of a worker (or a store) that reports none
 * @param phase what the worker was doing at its last heartbeat ("writing step 3, 40 %"); empty when
 *     it said nothing
 */
public record SourceRecord(
    String identity,
    String workerId,
    int rank,
    byte[] blob,
    SourceStatus status,
    long updatedAtMillis,
    long progress,
    String phase) {

  /** The progress of a record that carries none (an older writer or store). */
  public static final long NO_PROGRESS = -1;

  public SourceRecord {
    Objects.requireNonNull(identity, "identity");
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(blob, "blob of worker " + workerId);
    Objects.requireNonNull(status, "status");
    phase = phase == null ? "" : phase;
  }

  /** A record without progress ({@link #NO_PROGRESS}, empty phase). */
  public SourceRecord(
      String identity,
      String workerId,
      int rank,
      byte[] blob,
      SourceStatus status,
      long updatedAtMillis) {
    this(identity, workerId, rank, blob, status, updatedAtMillis, NO_PROGRESS, "");
  }

  /** Whether the record carries a progress counter. */
  public boolean reportsProgress() {
    return progress != NO_PROGRESS;
  }

  /** The same record with another blob. */
  public SourceRecord withBlob(byte[] newBlob) {
    return new SourceRecord(
        identity, workerId, rank, newBlob, status, updatedAtMillis, progress, phase);
  }
}
