package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A store that forwards every call to another one; subclasses override what they want to observe or
 * change (metrics, tracing, fault injection in tests).
 */
@Stable
public abstract class ForwardingMetadataStore implements MetadataStore {
  private final MetadataStore delegate;

  protected ForwardingMetadataStore(MetadataStore delegate) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
  }

  /** The store calls go to. */
  protected final MetadataStore delegate() {
    return delegate;
  }

  @Override
  public String uri() {
    return delegate.uri();
  }

  @Override
  public void publish(SourceRecord record) {
    delegate.publish(record);
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    delegate.heartbeat(identity, workerId, status);
  }

  @Override
  public void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    delegate.heartbeat(identity, workerId, status, progress, phase);
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness) {
    return listReady(identity, freshness, true);
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    return delegate.listReady(identity, freshness, withBlobs);
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    return delegate.get(identity, workerId);
  }

  @Override
  public void remove(String identity, String workerId) {
    delegate.remove(identity, workerId);
  }

  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public dev.mx.api.metadata.WeightVersionStore versions() {
    return delegate.versions();
  }
}
