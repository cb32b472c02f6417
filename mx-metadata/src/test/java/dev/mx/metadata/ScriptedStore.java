package dev.mx.metadata;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test double around a real store: records the order of {@code get} calls, detects overlapping
 * fetches, and can make listings or the fetch of chosen workers fail, or pretend a worker vanished
 * after the listing.
 */
final class ScriptedStore extends ForwardingMetadataStore {
  final List<String> fetched = new ArrayList<>();
  final Set<String> failingFetch = ConcurrentHashMap.newKeySet();
  final Set<String> vanished = ConcurrentHashMap.newKeySet();
  int failingListings;
  int listings;
  private final AtomicInteger inFlight = new AtomicInteger();
  volatile boolean overlapped;

  ScriptedStore(MetadataStore real) {
    super(real);
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    listings++;
    if (failingListings > 0) {
      failingListings--;
      throw new MetadataStoreException(uri(), "scripted listing failure");
    }
    return super.listReady(identity, freshness, withBlobs);
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    if (inFlight.incrementAndGet() > 1) {
      overlapped = true;
    }
    try {
      fetched.add(workerId);
      if (failingFetch.contains(workerId)) {
        throw new MetadataStoreException(uri(), "scripted fetch failure of " + workerId);
      }
      if (vanished.contains(workerId)) {
        return Optional.empty();
      }
      return super.get(identity, workerId);
    } finally {
      inFlight.decrementAndGet();
    }
  }
}
