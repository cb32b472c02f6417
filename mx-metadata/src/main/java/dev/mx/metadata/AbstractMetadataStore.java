package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What every store of this module shares: the URI for messages, argument checks, an idempotent
 * close that makes later calls fail, and the READY/freshness rule and listing order of ModelExpress
 * (ARCHITECTURE §7.5).
 */
@Stable
public abstract class AbstractMetadataStore implements MetadataStore {
  /** Newest heartbeat first; ties by worker id so listings are stable. */
  protected static final Comparator<SourceRecord> NEWEST_FIRST =
      Comparator.comparingLong(SourceRecord::updatedAtMillis)
          .reversed()
          .thenComparing(SourceRecord::workerId);

  private final String uri;
  private final AtomicBoolean closed = new AtomicBoolean();

  protected AbstractMetadataStore(String uri) {
    this.uri = uri;
  }

  @Override
  public final String uri() {
    return uri;
  }

  @Override
  public final List<SourceRecord> listReady(String identity, Duration freshness) {
    return listReady(identity, freshness, true);
  }

  /**
   * Whether a record counts as a live READY source at {@code nowMillis}: status READY, heartbeated
   * at least once, and no older than {@code freshness}.
   */
  protected static boolean isFreshReady(SourceRecord r, long nowMillis, Duration freshness) {
    return r.status() == SourceStatus.READY
        && r.updatedAtMillis() > 0
        && nowMillis - r.updatedAtMillis() <= freshness.toMillis();
  }

  /** A private copy of a record as published: not heartbeated yet, progress and phase dropped. */
  protected static SourceRecord unbeaten(SourceRecord r) {
    return new SourceRecord(r.identity(), r.workerId(), r.rank(), r.blob().clone(), r.status(), 0);
  }

  /**
   * The record stamped by a heartbeat at {@code nowMillis}; a null {@code progress} keeps its
   * progress and phase.
   */
  protected static SourceRecord beaten(
      SourceRecord r, SourceStatus status, long nowMillis, Long progress, String phase) {
    return new SourceRecord(
        r.identity(),
        r.workerId(),
        r.rank(),
        r.blob(),
        status,
        nowMillis,
        progress == null ? r.progress() : progress,
        progress == null ? r.phase() : phase);
  }

  /** The record with another blob (an empty one for blob-less listings). */
  protected static SourceRecord withBlob(SourceRecord r, byte[] blob) {
    return r.withBlob(blob);
  }

  /** Fails when the store was closed. */
  protected final void ensureOpen() {
    if (closed.get()) {
      throw new MetadataStoreException(uri, "the store is closed");
    }
  }

  /** Rejects a null or empty identity or worker id, naming which. */
  protected final void requireName(String what, String value) {
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(uri + ": " + what + " must be a non-empty string");
    }
  }

  /** Rejects a non-positive freshness window. */
  protected final void requireFreshness(Duration freshness) {
    if (freshness == null || freshness.isNegative() || freshness.isZero()) {
      throw new IllegalArgumentException(uri + ": freshness must be positive, got " + freshness);
    }
  }

  /** The error for a heartbeat of a worker that never published (or was removed or expired). */
  protected final MetadataStoreException unknownSource(String identity, String workerId) {
    return new MetadataStoreException(
        uri,
        "no record of worker '"
            + workerId
            + "' under identity '"
            + identity
            + "' (publish before heartbeating; the record may have been removed or expired)");
  }

  @Override
  public final void close() {
    if (closed.compareAndSet(false, true)) {
      doClose();
    }
  }

  /** Releases the store's resources; runs once. */
  protected void doClose() {}

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[" + uri + "]";
  }
}
