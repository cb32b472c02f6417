package dev.mx.api.metadata;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** A directory of publishers. Implementations are safe for concurrent use; close is idempotent. */
public interface MetadataStore extends AutoCloseable {

  /** The URI the store was opened with, for messages. */
  String uri();

  /**
   * Publishes (or replaces) a worker's record. It is listed as READY only after its first
   * heartbeat.
   */
  void publish(SourceRecord record);

  /** Stamps the worker's status and heartbeat time; its progress and phase stay as they were. */
  void heartbeat(String identity, String workerId, SourceStatus status);

  /**
   * Stamps the worker's status and heartbeat time together with its progress counter and phase
   * (docs/VERSIONS.md, "Waiting on liveness"). A store that keeps no progress ignores the two; its
   * waiters then judge the worker by its heartbeat time alone.
   *
   * @param progress a counter that never decreases for one worker ({@link SourceRecord#NO_PROGRESS}
   *     reports none)
   * @param phase a short text saying what the worker is doing
   */
  default void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    heartbeat(identity, workerId, status);
  }

  /**
   * Records of {@code identity} with status READY whose last heartbeat is within {@code freshness},
   * newest first.
   */
  List<SourceRecord> listReady(String identity, Duration freshness);

  /**
   * As {@link #listReady(String, Duration)}; with {@code withBlobs} false the records carry an
   * empty blob, so a caller that fetches tables one at a time with {@link #get} lists cheaply.
   * Stores that keep blobs apart from liveness override this; the default lists with blobs and
   * drops them.
   */
  default List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    List<SourceRecord> full = listReady(identity, freshness);
    if (withBlobs) {
      return full;
    }
    return full.stream().map(r -> r.withBlob(new byte[0])).toList();
  }

  /** One worker's record. */
  Optional<SourceRecord> get(String identity, String workerId);

  /** Removes a worker's record. */
  void remove(String identity, String workerId);

  /**
   * The weight versions and leases kept in this store ({@link WeightVersionStore}); they live and
   * close with it. The default is a store without versions.
   *
   * @throws UnsupportedOperationException naming the store when it keeps no versions
   */
  default WeightVersionStore versions() {
    throw new UnsupportedOperationException(
        uri() + ": this metadata store keeps no weight versions");
  }

  @Override
  void close();
}
