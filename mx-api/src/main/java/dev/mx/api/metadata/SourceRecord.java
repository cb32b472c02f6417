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
 */
public record SourceRecord(
    String identity,
    String workerId,
    int rank,
    byte[] blob,
    SourceStatus status,
    long updatedAtMillis) {

  public SourceRecord {
    Objects.requireNonNull(identity, "identity");
    Objects.requireNonNull(workerId, "workerId");
    Objects.requireNonNull(blob, "blob of worker " + workerId);
    Objects.requireNonNull(status, "status");
  }
}
