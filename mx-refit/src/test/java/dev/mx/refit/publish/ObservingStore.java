package dev.mx.refit.publish;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

/** Test double around a real store that lets a test look at the world just before each heartbeat lands. */
final class ObservingStore implements MetadataStore {
  interface HeartbeatObserver {
    void beforeHeartbeat(String identity, String workerId, SourceStatus status);
  }

  private final MetadataStore real;
  private final HeartbeatObserver observer;

  ObservingStore(MetadataStore real, HeartbeatObserver observer) {
    this.real = real;
    this.observer = observer;
  }

  @Override
  public String uri() {
    return real.uri();
  }

  @Override
  public void publish(SourceRecord record) {
    real.publish(record);
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    observer.beforeHeartbeat(identity, workerId, status);
    real.heartbeat(identity, workerId, status);
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness) {
    return real.listReady(identity, freshness);
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    return real.get(identity, workerId);
  }

  @Override
  public void remove(String identity, String workerId) {
    real.remove(identity, workerId);
  }

  @Override
  public void close() {
    real.close();
  }
}
