package dev.mx.metadata.memory;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.AbstractMetadataStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A store inside this JVM. Stores opened with the same name ({@code memory:NAME}; {@code memory:}
 * is the name "") share one directory, so a publisher and a receiver in one process find each
 * other. Directories live as long as the JVM.
 */
@Internal
public final class MemoryMetadataStore extends AbstractMetadataStore {
  private static final Map<String, Map<String, Map<String, SourceRecord>>> DIRECTORIES =
      new ConcurrentHashMap<>();

  /** identity → worker id → record (blobs are private copies). */
  private final Map<String, Map<String, SourceRecord>> directory;

  private final LongSupplier clockMillis;
  private final MemoryWeightVersions versions;

  /** A store on the directory named {@code name}, timed by the wall clock. */
  public MemoryMetadataStore(String name) {
    this(name, System::currentTimeMillis);
  }

  /** As above with an explicit clock (epoch milliseconds). */
  public MemoryMetadataStore(String name, LongSupplier clockMillis) {
    super("memory:" + name);
    this.directory = DIRECTORIES.computeIfAbsent(name, n -> new ConcurrentHashMap<>());
    this.clockMillis = clockMillis;
    this.versions = new MemoryWeightVersions(name, uri(), clockMillis, this::ensureOpen);
  }

  @Override
  public WeightVersionStore versions() {
    return versions;
  }

  private Map<String, SourceRecord> workers(String identity) {
    return directory.computeIfAbsent(identity, i -> new ConcurrentHashMap<>());
  }

  @Override
  public void publish(SourceRecord record) {
    ensureOpen();
    requireName("identity", record.identity());
    requireName("worker id", record.workerId());
    workers(record.identity()).put(record.workerId(), unbeaten(record));
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    beat(identity, workerId, status, null, null);
  }

  @Override
  public void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    beat(identity, workerId, status, progress, phase);
  }

  /** Stamps a record; a null progress keeps the record's progress and phase. */
  private void beat(
      String identity, String workerId, SourceStatus status, Long progress, String phase) {
    ensureOpen();
    long now = clockMillis.getAsLong();
    SourceRecord updated =
        workers(identity)
            .computeIfPresent(workerId, (w, r) -> beaten(r, status, now, progress, phase));
    if (updated == null) {
      throw unknownSource(identity, workerId);
    }
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    ensureOpen();
    requireFreshness(freshness);
    long now = clockMillis.getAsLong();
    return workers(identity).values().stream()
        .filter(r -> isFreshReady(r, now, freshness))
        .sorted(NEWEST_FIRST)
        .map(r -> withBlob(r, withBlobs ? r.blob().clone() : new byte[0]))
        .toList();
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    ensureOpen();
    return Optional.ofNullable(workers(identity).get(workerId))
        .map(r -> withBlob(r, r.blob().clone()));
  }

  @Override
  public void remove(String identity, String workerId) {
    ensureOpen();
    workers(identity).remove(workerId);
  }
}
