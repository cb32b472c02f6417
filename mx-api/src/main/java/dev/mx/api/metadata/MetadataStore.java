package dev.mx.api.metadata;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** A directory of publishers. Implementations are safe for concurrent use; close is idempotent. */
public interface MetadataStore extends AutoCloseable {

  /** The URI the store was opened with, for messages. */
  String uri();

  /** Publishes (or replaces) a worker's record. It is listed as READY only after its first heartbeat. */
  void publish(SourceRecord record);

  /** Stamps the worker's status and heartbeat time. */
  void heartbeat(String identity, String workerId, SourceStatus status);

  /**
   * Records of {@code identity} with status READY whose last heartbeat is within {@code freshness},
   * newest first.
   */
  List<SourceRecord> listReady(String identity, Duration freshness);

  /** One worker's record. */
  Optional<SourceRecord> get(String identity, String workerId);

  /** Removes a worker's record. */
  void remove(String identity, String workerId);

  @Override
  void close();
}
