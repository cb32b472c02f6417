package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The discovery quorum (ModelExpress; ARCHITECTURE §7.5) over a real in-memory store, timed by a
 * fake clock.
 */
class DiscoveryTest {
  private static final String IDENTITY = "model=m;role=trainer";
  private final AtomicLong wallMillis = new AtomicLong(1_700_000_000_000L);
  private final ScriptedStore store =
      new ScriptedStore(new MemoryMetadataStore("discovery-" + UUID.randomUUID(), wallMillis::get));
  private final FakeTicker ticker = new FakeTicker();
  private final Discovery discovery =
      Discovery.on(store)
          .withTicker(ticker)
          .withFreshness(Duration.ofSeconds(90))
          .withPollInterval(Duration.ofSeconds(1));

  @AfterEach
  void close() {
    store.close();
  }

  /**
   * Publishes and heartbeats worker {@code w} with a table of {@code tensors} entries; later ones
   * are newer.
   */
  private void publisher(String w, int tensors) {
    store.publish(
        new SourceRecord(
            IDENTITY, w, 0, TestTables.blob("agent-" + w, tensors), SourceStatus.READY, 0));
    wallMillis.addAndGet(10);
    store.heartbeat(IDENTITY, w, SourceStatus.READY);
  }

  private static List<String> agents(List<ShardTable> tables) {
    return tables.stream().map(ShardTable::agentName).toList();
  }

  @Test
  void returnsExactlyNTablesNewestFirst() {
    publisher("a", 2);
    publisher("b", 3);
    publisher("c", 4);
    List<ShardTable> found = discovery.await(IDENTITY, 2, Duration.ofSeconds(5));
    assertEquals(List.of("agent-c", "agent-b"), agents(found));
    assertEquals(List.of("c", "b"), store.fetched, "fetched in list order, stopping at the quorum");
    assertEquals(List.of(), ticker.sleeps, "no waiting when the quorum is there");
  }

  @Test
  void emptyTablesNeverSatisfyTheQuorumAndAreCountedInTheTimeout() {
    publisher("full", 2);
    publisher("empty1", 0);
    publisher("empty2", 0);
    DiscoveryTimeoutException e =
        assertThrows(
            DiscoveryTimeoutException.class,
            () -> discovery.await(IDENTITY, 2, Duration.ofSeconds(3)));
    assertEquals(3, e.ready());
    assertEquals(1, e.nonEmpty());
    assertEquals(2, e.empty());
    assertEquals(0, e.unreadable());
    assertEquals(store.uri(), e.store());
    assertTrue(
        e.getMessage()
            .contains(
                "discovery on "
                    + store.uri()
                    + " timed out after 3.0 s: expected 2"
                    + " non-empty READY trainer table(s), saw 3 READY, 1 non-empty, 2 empty"),
        e.getMessage());
    assertEquals(4, store.listings, "polls at 0, 1, 2 and 3 s");
    assertEquals(
        List.of(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1)),
        ticker.sleeps);
  }

  @Test
  void staleAndSilentPublishersAreExcluded() {
    publisher("stale", 2);
    store.heartbeat(IDENTITY, "stale", SourceStatus.STALE);
    publisher("silent", 2);
    wallMillis.addAndGet(91_000); // "silent" last heartbeated 91 s ago
    publisher("live", 2);
    assertEquals(
        List.of("agent-live"), agents(discovery.await(IDENTITY, 1, Duration.ofSeconds(1))));
    DiscoveryTimeoutException e =
        assertThrows(
            DiscoveryTimeoutException.class,
            () -> discovery.await(IDENTITY, 2, Duration.ofMillis(500)));
    assertEquals(1, e.ready());
    assertFalse(
        store.fetched.contains("stale") || store.fetched.contains("silent"),
        store.fetched.toString());
  }

  @Test
  void oneUnreadableSourceIsToleratedAndTheSweepGoesOn() {
    publisher("a", 1);
    store.publish(
        new SourceRecord(
            IDENTITY,
            "garbage",
            0,
            "{not a table".getBytes(StandardCharsets.UTF_8),
            SourceStatus.READY,
            0));
    wallMillis.addAndGet(10);
    store.heartbeat(IDENTITY, "garbage", SourceStatus.READY);
    publisher("unfetchable", 1);
    store.failingFetch.add("unfetchable");
    publisher("b", 1);
    List<ShardTable> found = discovery.await(IDENTITY, 2, Duration.ofSeconds(1));
    assertEquals(List.of("agent-b", "agent-a"), agents(found));
    assertEquals(List.of("b", "unfetchable", "garbage", "a"), store.fetched);

    Discovery.Sweep sweep = discovery.sweep(IDENTITY, 3);
    assertEquals(4, sweep.ready());
    assertEquals(2, sweep.nonEmpty());
    assertEquals(2, sweep.unreadable());
    assertTrue(
        sweep.lastFailure().getMessage().contains("'garbage'"), sweep.lastFailure().getMessage());
    DiscoveryTimeoutException e =
        assertThrows(
            DiscoveryTimeoutException.class,
            () -> discovery.await(IDENTITY, 3, Duration.ofSeconds(1)));
    assertEquals(2, e.unreadable());
    assertInstanceOf(
        ShardTableFormatException.class, e.getCause().getCause(), "the decode error is kept");
  }

  @Test
  void fetchesAreSerialAndASourceRemovedSinceTheListingIsSkipped() {
    for (String w : new String[] {"a", "b", "c", "d"}) {
      publisher(w, 1);
    }
    store.vanished.add("c");
    List<ShardTable> found = discovery.await(IDENTITY, 3, Duration.ofSeconds(1));
    assertEquals(List.of("agent-d", "agent-b", "agent-a"), agents(found));
    assertEquals(List.of("d", "c", "b", "a"), store.fetched);
    assertFalse(store.overlapped, "one fetch at a time");
  }

  @Test
  void aQuorumCompletedOnALaterPollIsFound() {
    publisher("early", 1);
    ticker.onSleep =
        () -> {
          if (ticker.sleeps.size() == 2) {
            publisher("late", 1);
          }
        };
    assertEquals(
        List.of("agent-late", "agent-early"),
        agents(discovery.await(IDENTITY, 2, Duration.ofSeconds(10))));
    assertEquals(3, store.listings);
  }

  @Test
  void listingFailuresAreRetriedUntilTheStoreAnswers() {
    publisher("a", 1);
    store.failingListings = 2;
    assertEquals(List.of("agent-a"), agents(discovery.await(IDENTITY, 1, Duration.ofSeconds(10))));
    assertEquals(3, store.listings);

    store.failingListings = Integer.MAX_VALUE;
    DiscoveryTimeoutException e =
        assertThrows(
            DiscoveryTimeoutException.class,
            () -> discovery.await(IDENTITY, 1, Duration.ofSeconds(2)));
    assertInstanceOf(MetadataStoreException.class, e.getCause());
    assertTrue(e.getMessage().contains("scripted listing failure"), e.getMessage());
  }

  @Test
  void theLastPollSleepsOnlyUntilTheDeadline() {
    assertThrows(
        DiscoveryTimeoutException.class,
        () -> discovery.await(IDENTITY, 1, Duration.ofMillis(2500)));
    assertEquals(
        List.of(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofMillis(500)),
        ticker.sleeps);
  }

  @Test
  void argumentsAreChecked() {
    assertThrows(
        IllegalArgumentException.class, () -> discovery.await(IDENTITY, 0, Duration.ofSeconds(1)));
    assertThrows(IllegalArgumentException.class, () -> discovery.await(IDENTITY, 1, Duration.ZERO));
    assertThrows(
        IllegalArgumentException.class, () -> discovery.withPollInterval(Duration.ofSeconds(-1)));
  }
}
