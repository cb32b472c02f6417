package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The discovery quorum of ModelExpress (ARCHITECTURE §7.5): wait until exactly {@code expected}
 * publishers of an identity are READY, fresh and have a non-empty shard table, and return their
 * tables.
 *
 * <p>Each poll lists the READY sources (newest heartbeat first), then fetches and decodes their
 * tables one at a time in list order (serial on purpose: ModelExpress measured concurrent fetches
 * slower against one store). A source whose table cannot be fetched or decoded counts as unreadable
 * and the sweep goes on; a source removed since the listing is skipped; a READY source with an
 * empty table counts as empty and never satisfies the quorum. The sweep stops at exactly {@code
 * expected} tables. A poll whose listing fails (a dead store) is retried at the next poll. Past the
 * deadline the last sweep's counts are reported in a {@link DiscoveryTimeoutException} naming the
 * store.
 *
 * <p>Instances are immutable; the {@code with*} methods return adjusted copies.
 */
@Stable
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

  private Discovery(
      MetadataStore store,
      Duration freshness,
      Duration poll,
      ShardTableCodec codec,
      Ticker ticker) {
    this.store = Objects.requireNonNull(store, "store");
    this.freshness = requirePositive(freshness, "freshness");
    this.poll = requirePositive(poll, "poll interval");
    this.codec = Objects.requireNonNull(codec, "codec");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /**
   * Discovery on {@code store} with the heartbeat timeout of the settings ({@code
   * MX_HEARTBEAT_TIMEOUT_S}, 90 s) as freshness, a 1 s poll and the standard codec.
   */
  public static Discovery on(MetadataStore store) {
    return new Discovery(
        store,
        Liveness.heartbeatTimeout(Settings.system()),
        DEFAULT_POLL,
        ShardTableCodec.standard(),
        Ticker.system());
  }

  /** How recently a publisher must have heartbeat READY to count. */
  public Duration freshness() {
    return freshness;
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
  public record Sweep(
      List<ShardTable> tables,
      int ready,
      int nonEmpty,
      int empty,
      int unreadable,
      Throwable lastFailure) {
    public Sweep {
      tables = List.copyOf(tables);
    }
  }

  /**
   * One pass: list, then fetch and decode in list order until {@code expected} non-empty tables are
   * in hand.
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
        lastFailure =
            new MxException(
                "table of worker '"
                    + ref.workerId()
                    + "' (rank "
                    + ref.rank()
                    + ") on "
                    + store.uri()
                    + " is unreadable: "
                    + e.getMessage(),
                e);
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
   * @throws DiscoveryTimeoutException past {@code timeout}, with the last sweep's counts and last
   *     failure
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
          logCost(identity, last.tables(), polls, ticker.nanoTime() - start);
          return last.tables();
        }
        if (last.lastFailure() != null) {
          lastFailure = last.lastFailure();
        }
      } catch (RuntimeException listingFailed) {
        lastFailure = listingFailed(lastFailure, listingFailed);
      }
      long now = ticker.nanoTime();
      if (now - deadline >= 0) {
        throw new DiscoveryTimeoutException(
            store.uri(),
            expected,
            last.ready(),
            last.nonEmpty(),
            last.empty(),
            last.unreadable(),
            timeout.toMillis() / 1000.0,
            lastFailure);
      }
      try {
        ticker.sleep(Duration.ofNanos(Math.min(poll.toNanos(), deadline - now)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new MxException("discovery on " + store.uri() + " was interrupted", e);
      }
    }
  }

  /**
   * The trainer job a receiver expects: {@code worldSize} publishers with ranks {@code 0 …
   * worldSize-1}, and, when not null, the layout they must declare.
   */
  public record Expectation(int worldSize, String layout) {
    public Expectation {
      requireExpected(worldSize);
    }

    /**
     * Fails when {@code table} declares another topology than this one (a table declaring none
     * passes).
     *
     * @param who the table's publisher, as errors name it
     * @param where the store it came from
     * @throws InconsistentSourcesException naming both topologies
     */
    public void requireDeclaredBy(ShardTable table, String who, String where) {
      if (table.topology() != null
          && (table.topology().worldSize() != worldSize
              || (layout != null && !layout.equals(table.topology().layout())))) {
        throw new InconsistentSourcesException(
            "the receiver expects trainer topology "
                + this
                + " but "
                + who
                + " declares "
                + table.topology()
                + " on "
                + where
                + "; start the receiver with the publishers' topology");
      }
    }

    /**
     * The rank {@code table} claims (its declared topology's, else {@code listedRank}, the rank its
     * publisher is listed under), checked to be one of this job's: the check {@link
     * #awaitConsistent} makes of every READY publisher, and a weight version's receiver of every
     * slot.
     *
     * @param who the table's publisher, as errors name it
     * @param where the store it came from
     * @throws InconsistentSourcesException when the table declares another topology (naming both)
     *     or the rank lies outside {@code 0 … worldSize-1}
     */
    public int requireRankOf(ShardTable table, int listedRank, String who, String where) {
      requireDeclaredBy(table, who, where);
      int rank = table.topology() != null ? table.topology().rank() : listedRank;
      if (rank < 0 || rank >= worldSize) {
        throw new InconsistentSourcesException(
            who
                + " claims rank "
                + rank
                + " but the receiver expects trainer topology "
                + this
                + " (ranks 0.."
                + (worldSize - 1)
                + ") on "
                + where);
      }
      return rank;
    }

    @Override
    public String toString() {
      return (layout == null ? "a trainer job" : layout)
          + " ("
          + worldSize
          + " rank"
          + (worldSize == 1 ? "" : "s")
          + ")";
    }
  }

  /**
   * A consistent job: one table per rank, in rank order, all of one step (null when the tables
   * carry none).
   */
  public record Consistent(List<ShardTable> tables, Long step) {
    public Consistent {
      tables = List.copyOf(tables);
    }
  }

  /**
   * Polls until the READY publishers form exactly the expected job (issue 12): ranks {@code 0 …
   * N-1} each once, every table of one step. A publisher declaring another topology, or a rank
   * outside the job, fails at once naming both topologies; duplicate ranks and mixed steps are
   * waited out (a republish in flight, a restarted publisher whose predecessor has not expired)
   * until {@code timeout}, then fail naming the publishers and steps seen.
   *
   * @throws InconsistentSourcesException for a mismatched topology, a duplicate rank or mixed steps
   * @throws DiscoveryTimeoutException when ranks are still missing at the deadline
   */
  public Consistent awaitConsistent(String identity, Expectation expected, Duration timeout) {
    requirePositive(timeout, "timeout");
    long start = ticker.nanoTime();
    long deadline = start + timeout.toNanos();
    int polls = 0;
    String lastProblem = null;
    Throwable lastFailure = null;
    int ready = 0;
    int found = 0;
    int empty = 0;
    int unreadable = 0;
    while (true) {
      polls++;
      try {
        List<SourceRecord> listed = store.listReady(identity, freshness, false);
        Map<Integer, List<Entry>> byRank = new TreeMap<>();
        ready = listed.size();
        empty = 0;
        unreadable = 0;
        for (SourceRecord ref : listed) {
          ShardTable table;
          try {
            Optional<SourceRecord> full = store.get(identity, ref.workerId());
            if (full.isEmpty()) {
              continue;
            }
            table = codec.decode(full.get().blob());
          } catch (RuntimeException e) {
            unreadable++;
            lastFailure =
                new MxException(
                    "table of worker '"
                        + ref.workerId()
                        + "' (rank "
                        + ref.rank()
                        + ") on "
                        + store.uri()
                        + " is unreadable: "
                        + e.getMessage(),
                    e);
            continue;
          }
          if (table.entryCount() == 0) {
            empty++;
            continue;
          }
          int rank =
              expected.requireRankOf(
                  table, ref.rank(), "publisher '" + ref.workerId() + "'", store.uri());
          byRank
              .computeIfAbsent(rank, k -> new ArrayList<>())
              .add(new Entry(ref.workerId(), table));
        }
        found = byRank.size();
        lastProblem = problem(byRank, expected);
        if (lastProblem == null) {
          List<ShardTable> tables = new ArrayList<>();
          byRank.values().forEach(l -> tables.add(l.get(0).table()));
          logCost(identity, tables, polls, ticker.nanoTime() - start);
          return new Consistent(tables, tables.get(0).publisherStep());
        }
      } catch (InconsistentSourcesException e) {
        throw e;
      } catch (RuntimeException listingFailed) {
        lastFailure = listingFailed(lastFailure, listingFailed);
      }
      long now = ticker.nanoTime();
      if (now - deadline >= 0) {
        if (lastProblem != null && !lastProblem.startsWith("missing")) {
          throw new InconsistentSourcesException(
              "publishers of '"
                  + identity
                  + "' on "
                  + store.uri()
                  + " stayed inconsistent for "
                  + timeout.toMillis() / 1000.0
                  + " s: "
                  + lastProblem);
        }
        throw new DiscoveryTimeoutException(
            store.uri(),
            expected.worldSize(),
            ready,
            found,
            empty,
            unreadable,
            timeout.toMillis() / 1000.0,
            lastFailure == null && lastProblem != null
                ? new MxException(lastProblem)
                : lastFailure);
      }
      try {
        ticker.sleep(Duration.ofNanos(Math.min(poll.toNanos(), deadline - now)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new MxException("discovery on " + store.uri() + " was interrupted", e);
      }
    }
  }

  private record Entry(String workerId, ShardTable table) {}

  /**
   * Logs a failed listing once per distinct message (it is retried at the next poll) and keeps it
   * as the cause.
   */
  private Throwable listingFailed(Throwable last, RuntimeException failure) {
    if (last == null || !Objects.equals(last.getMessage(), failure.getMessage())) {
      LOG.warn("discovery on {}: listing failed, retrying: {}", store.uri(), failure.toString());
    }
    return failure;
  }

  /**
   * Null when the ranks form the job exactly once at one step; otherwise what is wrong, naming
   * publishers.
   */
  private static String problem(Map<Integer, List<Entry>> byRank, Expectation expected) {
    for (Map.Entry<Integer, List<Entry>> e : byRank.entrySet()) {
      if (e.getValue().size() > 1) {
        StringBuilder sb =
            new StringBuilder("rank " + e.getKey() + " is claimed by more than one publisher:");
        for (Entry x : e.getValue()) {
          sb.append(" '")
              .append(x.workerId())
              .append("' (step ")
              .append(x.table().publisherStep())
              .append(')');
        }
        return sb.toString();
      }
    }
    if (byRank.size() < expected.worldSize()) {
      List<Integer> missing = new ArrayList<>();
      for (int r = 0; r < expected.worldSize(); r++) {
        if (!byRank.containsKey(r)) {
          missing.add(r);
        }
      }
      return "missing rank(s) " + missing + " of " + expected;
    }
    Map<Long, List<String>> steps =
        new TreeMap<>(java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder()));
    byRank.forEach(
        (rank, l) ->
            steps
                .computeIfAbsent(l.get(0).table().publisherStep(), k -> new ArrayList<>())
                .add(l.get(0).workerId()));
    if (steps.size() > 1) {
      StringBuilder sb = new StringBuilder("the tables carry mixed steps:");
      steps.forEach(
          (step, workers) -> sb.append(" step ").append(step).append(" from ").append(workers));
      return sb.toString();
    }
    return null;
  }

  private void logCost(String identity, List<ShardTable> tables, int polls, long elapsedNanos) {
    if (LOG.isInfoEnabled() || LOG.isDebugEnabled()) {
      long tensors = tables.stream().mapToLong(ShardTable::entryCount).sum();
      LOG.info(
          "found {} shard table(s) of {} tensor(s) for {} in {} after {} poll(s)",
          tables.size(),
          tensors,
          identity,
          String.format(java.util.Locale.ROOT, "%.3f s", elapsedNanos / 1e9),
          polls);
      // The machine-readable record, for log pipelines that collect it.
      LOG.debug(
          "MX_DISCOVER_COST {}",
          costRecord(store.uri(), identity, tables.size(), tensors, polls, elapsedNanos));
    }
  }

  /**
   * The {@code mx-discover-cost-v1} record as compact JSON, written by Jackson: store URIs and
   * identities may hold quotes, and no default locale decides the decimal point.
   */
  static String costRecord(
      String storeUri, String identity, int sources, long tensors, int polls, long elapsedNanos) {
    java.io.StringWriter out = new java.io.StringWriter();
    try (com.fasterxml.jackson.core.JsonGenerator g = RECORDS.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("schema", "mx-discover-cost-v1");
      g.writeStringField("store", storeUri);
      g.writeStringField("identity", identity);
      g.writeNumberField("sources", sources);
      g.writeNumberField("tensors", tensors);
      g.writeNumberField("polls", polls);
      g.writeNumberField(
          "elapsed_s",
          java.math.BigDecimal.valueOf(elapsedNanos / 1e9)
              .setScale(6, java.math.RoundingMode.HALF_EVEN));
      g.writeEndObject();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("could not write the discovery cost record", e);
    }
    return out.toString();
  }

  /** Writes the structured records this class logs. */
  private static final com.fasterxml.jackson.core.JsonFactory RECORDS =
      new com.fasterxml.jackson.core.JsonFactory();

  private static void requireExpected(int expected) {
    if (expected < 1) {
      throw new IllegalArgumentException(
          "discovery needs at least one expected publisher, got " + expected);
    }
  }

  private static Duration requirePositive(Duration d, String what) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException("discovery " + what + " must be positive, got " + d);
    }
    return d;
  }
}
