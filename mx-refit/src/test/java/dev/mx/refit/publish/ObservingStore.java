package dev.mx.refit.publish;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.ForwardingMetadataStore;

/**
 * Test double around a real store that lets a test look at the world just before each heartbeat
 * lands.
 */
final class ObservingStore extends ForwardingMetadataStore {
  interface HeartbeatObserver {
    void beforeHeartbeat(String identity, String workerId, SourceStatus status);
  }

  private final HeartbeatObserver observer;

  ObservingStore(MetadataStore real, HeartbeatObserver observer) {
    super(real);
    this.observer = observer;
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    observer.beforeHeartbeat(identity, workerId, status);
    super.heartbeat(identity, workerId, status);
  }
}
