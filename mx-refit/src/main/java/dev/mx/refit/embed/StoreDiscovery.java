package dev.mx.refit.embed;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.metadata.Discovery;
import dev.mx.plan.merge.MergedSources;
import dev.mx.plan.merge.ReplicaMerge;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.SourceDiscovery;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Source discovery through a {@link MetadataStore}: waits until exactly {@code publishers} READY
 * shard tables of {@code identity} are fresh (ModelExpress; ARCHITECTURE §7.5), merges their
 * replicas and returns the sources with each publisher's transport metadata. What a receiver in its
 * own process uses to find trainers.
 *
 * <p>{@link #consistent} also checks that the publishers form the trainer job the receiver expects
 * (their declared topology, ranks {@code 0 … N-1} once, one step), and when a publisher it found
 * before stopped heartbeating, its timeout names that publisher.
 */
@Stable
public final class StoreDiscovery implements SourceDiscovery {

  private final MetadataStore store;
  private final String identity;
  private final int publishers;
  private final Discovery.Expectation expected;
  private final Duration freshness;
  private final Duration poll;
  private final String owner;

  /** The publishers found by earlier discoveries: a timeout names those no longer READY. */
  private final Set<String> seen = new LinkedHashSet<>();

  private StoreDiscovery(
      MetadataStore store,
      String identity,
      int publishers,
      Discovery.Expectation expected,
      Duration freshness,
      Duration poll,
      String owner) {
    this.store = Objects.requireNonNull(store, "store");
    this.identity = Objects.requireNonNull(identity, "identity");
    if (publishers < 1) {
      throw new IllegalArgumentException(
          "expected publishers must be at least 1, got " + publishers);
    }
    this.publishers = publishers;
    this.expected = expected;
    this.freshness = freshness;
    this.poll = poll;
    this.owner = owner;
  }

  /** Discovery of {@code publishers} publishers of {@code identity} in {@code store}. */
  public static StoreDiscovery of(MetadataStore store, String identity, int publishers) {
    return new StoreDiscovery(
        store, identity, publishers, null, null, Duration.ofMillis(100), null);
  }

  /**
   * Discovery of one consistent trainer job of {@code identity}: the publishers must declare {@code
   * expected}'s topology, ranks {@code 0 … N-1} each once, all tables of one step (which the
   * sources then carry).
   */
  public static StoreDiscovery consistent(
      MetadataStore store, String identity, Discovery.Expectation expected) {
    Objects.requireNonNull(expected, "expected");
    return new StoreDiscovery(
        store, identity, expected.worldSize(), expected, null, Duration.ofMillis(100), null);
  }

  /**
   * Counts a publisher only if it heartbeat READY within {@code f} (default: the store's liveness).
   */
  public StoreDiscovery withFreshness(Duration f) {
    return new StoreDiscovery(store, identity, publishers, expected, f, poll, owner);
  }

  /** How often the store is polled while waiting (default 100 ms). */
  public StoreDiscovery withPollInterval(Duration p) {
    return new StoreDiscovery(store, identity, publishers, expected, freshness, p, owner);
  }

  /** Who discovers, for the first words of its errors (e.g. {@code receiver 1}). */
  public StoreDiscovery named(String who) {
    return new StoreDiscovery(store, identity, publishers, expected, freshness, poll, who);
  }

  @Override
  public DiscoveredSources discover(Duration timeout) {
    Discovery d = Discovery.on(store).withPollInterval(poll);
    if (freshness != null) {
      d = d.withFreshness(freshness);
    }
    if (expected == null) {
      return merge(d.await(identity, publishers, timeout), null);
    }
    Discovery.Consistent job;
    try {
      job = d.awaitConsistent(identity, expected, timeout);
    } catch (DiscoveryTimeoutException e) {
      throw stoppedPublishers(d.freshness(), e);
    }
    synchronized (seen) {
      for (ShardTable t : job.tables()) {
        seen.add(t.agentName());
      }
    }
    return merge(job.tables(), job.step());
  }

  /** The timeout, or one naming the publishers found before that went quiet since. */
  private MxException stoppedPublishers(Duration fresh, DiscoveryTimeoutException e) {
    Set<String> missing;
    synchronized (seen) {
      missing = new LinkedHashSet<>(seen);
    }
    for (SourceRecord r : store.listReady(identity, fresh)) {
      missing.remove(r.workerId());
    }
    if (missing.isEmpty()) {
      return e;
    }
    return new MxException(
        (owner == null ? "" : owner + ": ")
            + "publisher(s) "
            + String.join(", ", missing)
            + " stopped heartbeating READY (no heartbeat within "
            + fresh.toSeconds()
            + " s); "
            + e.getMessage(),
        e);
  }

  /**
   * The sources of one job's tables: their replicas merged (and kept aside for spreading), each
   * publisher's transport metadata by agent name, and the tables' step (null when they carry none
   * or it is not known).
   */
  public static DiscoveredSources merge(List<ShardTable> tables, Long step) {
    MergedSources merged = ReplicaMerge.merge(tables);
    Map<String, byte[]> peers = new LinkedHashMap<>();
    for (ShardTable t : tables) {
      peers.put(t.agentName(), t.agentMetadata());
    }
    return new DiscoveredSources(merged.sources(), peers, step, merged.replicas());
  }
}
