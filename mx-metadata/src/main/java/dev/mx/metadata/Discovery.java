package dev.mx.metadata;

import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The discovery quorum of ModelExpress §8.1: wait until exactly {@code expected} publishers of an identity
 * are READY, fresh and have a non-empty shard table, and return their tables.
 *
 * <p>Each poll lists the READY sources (newest heartbeat first), then fetches and decodes their tables one
 * at a time in list order (serial on purpose: ModelExpress measured concurrent fetches slower against one
 * store). A source whose table cannot be fetched or decoded counts as unreadable and the sweep goes on; a
 * source removed since the listing is skipped; a READY source with an empty table counts as empty and never
 * satisfies the quorum. The sweep stops at exactly {@code expected} tables. A poll whose listing fails (a
 * dead store) is retried at the next poll. Past the deadline the last sweep's counts are reported in a
 * {@link DiscoveryTimeoutException} naming the store.
 *
 * <p>Instances are immutable; the {@code with*} methods return adjusted copies.
 */
public final class Discovery {
  private static final Logger LOG = LoggerFactory.getLogger(Discovery.class);
  /** ModelExpress' default wait for a quorum. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(1200);
  /** Pause between polls. */
  public static final Duration DEFAULT_POLL = Duration.ofSeconds(1);

  private final MetadataStore store;
  private final Duration freshness;
  private final Duration poll;
  private final ShardTableCodec codec;
  private final Ticker ticker;

  private Discovery(MetadataStore store, Duration freshness, Duration poll, ShardTableCodec codec, Ticker ticker) {
    this.store = Objects.requireNonNull(store, "store");
    this.freshness = requirePositive(freshness, "freshness");
    this.poll = requirePositive(poll, "poll interval");
    this.codec = Objects.requireNonNull(codec, "codec");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /**
   * Discovery on {@code store} with the heartbeat timeout of the settings ({@code MX_HEARTBEAT_TIMEOUT_SECS},
   * 90 s) as freshness, a 1 s poll and the standard codec.
   */
  public static Discovery on(MetadataStore store) {
    return new Discovery(store, Liveness.heartbeatTimeout(Settings.system()), DEFAULT_POLL,
        ShardTableCodec.standard(), Ticker.system());
  }

  public Discovery withFreshness(Duration newFreshness) {
    return new Discovery(store, newFreshness, poll, codec, ticker);
  }

  public Discovery withPollInterval(Duration newPoll) {
    return new Discovery(store, freshness, newPoll, codec, ticker);
  }

  public Discovery withCodec(ShardTableCodec newCodec) {
    return new Discovery(store, freshness, poll, newCodec, ticker);
  }

  public Discovery withTicker(Ticker newTicker) {
    return new Discovery(store, freshness, poll, codec, newTicker);
  }

  /**
   * What one sweep saw.
   *
   * @param tables the non-empty tables collected, in list order (at most {@code expected})
   * @param ready READY fresh sources listed
   * @param nonEmpty non-empty tables read (equals {@code tables.size()})
   * @param empty READY sources whose table has no entries
   * @param unreadable READY sources whose table could not be fetched or decoded
   * @param lastFailure the last of those failures, or null
   */
  public record Sweep(List<ShardTable> tables, int ready, int nonEmpty, int empty, int unreadable,
      Throwable lastFailure) {
    public Sweep {
      tables = List.copyOf(tables);
    }
  }

  /**
   * One pass: list, then fetch and decode in list order until {@code expected} non-empty tables are in hand.
   *
   * @throws RuntimeException when listing fails (the store is unreachable)
   */
  public Sweep sweep(String identity, int expected) {
    requireExpected(expected);
    List<SourceRecord> listed = store.listReady(identity, freshness, false);
    List<ShardTable> tables = new ArrayList<>(expected);
    int empty = 0;
    int unreadable = 0;
    Throwable lastFailure = null;
    for (SourceRecord ref : listed) {
      if (tables.size() == expected) {
        break;
      }
      ShardTable table;
      try {
        Optional<SourceRecord> full = store.get(identity, ref.workerId());
        if (full.isEmpty()) {
          continue; // removed since the listing
        }
        table = codec.decode(full.get().blob());
      } catch (RuntimeException e) {
        unreadable++;
        lastFailure = new MxException("table of worker '" + ref.workerId() + "' (rank " + ref.rank() + ") on "
            + store.uri() + " is unreadable: " + e.getMessage(), e);
        LOG.warn("{}", lastFailure.getMessage());
        continue;
      }
      if (table.entryCount() == 0) {
        empty++;
      } else {
        tables.add(table);
      }
    }
    return new Sweep(tables, listed.size(), tables.size(), empty, unreadable, lastFailure);
  }

  /**
   * Polls until exactly {@code expected} non-empty READY tables are found.
   *
   * @return the tables in list order (newest heartbeat first)
   * @throws DiscoveryTimeoutException past {@code timeout}, with the last sweep's counts and last failure
   */
  public List<ShardTable> await(String identity, int expected, Duration timeout) {
    requireExpected(expected);
    requirePositive(timeout, "timeout");
    long start = ticker.nanoTime();
    long deadline = start + timeout.toNanos();
    Sweep last = new Sweep(List.of(), 0, 0, 0, 0, null);
    Throwable lastFailure = null;
    int polls = 0;
    while (true) {
      polls++;
      try {
        last = sweep(identity, expected);
        if (last.tables().size() == expected) {
          logCost(identity, last, polls, ticker.nanoTime() - start);
          return last.tables();
        }
        if (last.lastFailure() != null) {
          lastFailure = last.lastFailure();
        }
      } catch (RuntimeException listingFailed) {
        if (lastFailure == null || !Objects.equals(lastFailure.getMessage(), listingFailed.getMessage())) {
          LOG.warn("discovery on {}: listing failed, retrying: {}", store.uri(), listingFailed.toString());
        }
        lastFailure = listingFailed;
      }
      long now = ticker.nanoTime();
      if (now - deadline >= 0) {
        throw new DiscoveryTimeoutException(store.uri(), expected, last.ready(), last.nonEmpty(), last.empty(),
            last.unreadable(), timeout.toMillis() / 1000.0, lastFailure);
      }
      try {
        ticker.sleep(Duration.ofNanos(Math.min(poll.toNanos(), deadline - now)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new MxException("discovery on " + store.uri() + " was interrupted", e);
      }
    }
  }

  private void logCost(String identity, Sweep s, int polls, long elapsedNanos) {
    if (LOG.isInfoEnabled()) {
      long tensors = s.tables().stream().mapToLong(ShardTable::entryCount).sum();
      LOG.info("MX_DISCOVER_COST {\"schema\": \"mx-discover-cost-v1\", \"store\": \"{}\", \"identity\": \"{}\","
          + " \"sources\": {}, \"tensors\": {}, \"polls\": {}, \"elapsed_s\": {}}}", store.uri(), identity,
          s.tables().size(), tensors, polls, String.format("%.6f", elapsedNanos / 1e9));
    }
  }

  private static void requireExpected(int expected) {
    if (expected < 1) {
      throw new IllegalArgumentException("discovery needs at least one expected publisher, got " + expected);
    }
  }

  private static Duration requirePositive(Duration d, String what) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("discovery " + what + " must be positive, got " + d);
    }
    return d;
  }
}
