package dev.mx.refit.embed;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.metadata.Discovery;
import dev.mx.plan.merge.MergedSources;
import dev.mx.plan.merge.ReplicaMerge;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.SourceDiscovery;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Source discovery through a {@link MetadataStore}: waits until exactly {@code publishers} READY
 * shard tables of {@code identity} are fresh (ModelExpress; ARCHITECTURE §7.5), merges their
 * replicas and returns the sources with each publisher's transport metadata. What a receiver in its
 * own process uses to find trainers.
 */
public final class StoreDiscovery implements SourceDiscovery {

  private final MetadataStore store;
  private final String identity;
  private final int publishers;
  private final Duration freshness;
  private final Duration poll;

  private StoreDiscovery(
      MetadataStore store, String identity, int publishers, Duration freshness, Duration poll) {
    this.store = Objects.requireNonNull(store, "store");
    this.identity = Objects.requireNonNull(identity, "identity");
    if (publishers < 1) {
      throw new IllegalArgumentException(
          "expected publishers must be at least 1, got " + publishers);
    }
    this.publishers = publishers;
    this.freshness = freshness;
    this.poll = poll;
  }

  /** Discovery of {@code publishers} publishers of {@code identity} in {@code store}. */
  public static StoreDiscovery of(MetadataStore store, String identity, int publishers) {
    return new StoreDiscovery(store, identity, publishers, null, Duration.ofMillis(100));
  }

  /**
   * Counts a publisher only if it heartbeat READY within {@code f} (default: the store's liveness).
   */
  public StoreDiscovery withFreshness(Duration f) {
    return new StoreDiscovery(store, identity, publishers, f, poll);
  }

  /** How often the store is polled while waiting (default 100 ms). */
  public StoreDiscovery withPollInterval(Duration p) {
    return new StoreDiscovery(store, identity, publishers, freshness, p);
  }

  @Override
  public DiscoveredSources discover(Duration timeout) {
    Discovery d = Discovery.on(store).withPollInterval(poll);
    if (freshness != null) {
      d = d.withFreshness(freshness);
    }
    List<ShardTable> tables = d.await(identity, publishers, timeout);
    MergedSources merged = ReplicaMerge.merge(tables);
    Map<String, byte[]> peers = new LinkedHashMap<>();
    for (ShardTable t : tables) {
      peers.put(t.agentName(), t.agentMetadata());
    }
    return new DiscoveredSources(merged.sources(), peers);
  }
}
