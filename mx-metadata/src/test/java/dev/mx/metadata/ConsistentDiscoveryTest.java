package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.metadata.PublisherTopology;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Discovery of one consistent trainer job (issue 12): declared topology, ranks 0..N-1 each once,
 * one step — over a real in-memory store, timed by a fake clock.
 */
class ConsistentDiscoveryTest {
  private static final String IDENTITY = "model=m;role=trainer";
  private static final String TP4 = "megatron tp=4 pp=1 ep=1";
  private final AtomicLong wallMillis = new AtomicLong(1_700_000_000_000L);
  private final ScriptedStore store =
      new ScriptedStore(
          new MemoryMetadataStore("consistent-" + UUID.randomUUID(), wallMillis::get));
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

  private void publisher(String w, int rank, long step, PublisherTopology topology) {
    ShardTable t = TestTables.table("agent-" + w, 2, step, true);
    if (topology != null) {
      t = t.withTopology(topology);
    }
    store.publish(
        new SourceRecord(
            IDENTITY, w, rank, ShardTableCodec.standard().encode(t), SourceStatus.READY, 0));
    wallMillis.addAndGet(10);
    store.heartbeat(IDENTITY, w, SourceStatus.READY);
  }

  private void job(int world, String layout, long step) {
    for (int r = 0; r < world; r++) {
      publisher("w" + r, r, step, new PublisherTopology(r, world, layout));
    }
  }

  @Test
  void aConsistentJobComesBackInRankOrderWithItsStep() {
    job(4, TP4, 3);
    Discovery.Consistent c =
        discovery.awaitConsistent(
            IDENTITY, new Discovery.Expectation(4, TP4), Duration.ofSeconds(5));
    assertEquals(
        List.of("agent-w0", "agent-w1", "agent-w2", "agent-w3"),
        c.tables().stream().map(ShardTable::agentName).toList());
    assertEquals(3L, c.step());
    assertEquals(List.of(), ticker.sleeps, "no waiting");
  }

  @Test
  void aReceiverExpectingFewerRanksFailsAtOnceNamingBothTopologies() {
    job(4, TP4, 0);
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY,
                    new Discovery.Expectation(2, "megatron tp=2 pp=1 ep=1"),
                    Duration.ofSeconds(60)));
    assertTrue(
        e.getMessage().contains("expects trainer topology megatron tp=2 pp=1 ep=1 (2 ranks)"),
        e.getMessage());
    assertTrue(
        e.getMessage().contains("declares megatron tp=4 pp=1 ep=1 (4 ranks)"), e.getMessage());
    assertEquals(List.of(), ticker.sleeps, "fails at once, no waiting for the timeout");
  }

  @Test
  void aReceiverExpectingMoreRanksFailsAtOnceNamingBothTopologies() {
    job(2, "megatron tp=2 pp=1 ep=1", 0);
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY, new Discovery.Expectation(4, TP4), Duration.ofSeconds(60)));
    assertTrue(
        e.getMessage().contains("expects trainer topology " + TP4 + " (4 ranks)"), e.getMessage());
    assertTrue(
        e.getMessage().contains("declares megatron tp=2 pp=1 ep=1 (2 ranks)"), e.getMessage());
    assertEquals(List.of(), ticker.sleeps);
  }

  @Test
  void undeclaredPublishersAreHeldToTheirStoreRanks() {
    for (int r = 0; r < 3; r++) {
      publisher("w" + r, r, 0, null);
    }
    publisher("w9", 9, 0, null);
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY, new Discovery.Expectation(4, null), Duration.ofSeconds(5)));
    assertTrue(e.getMessage().contains("'w9' claims rank 9"), e.getMessage());
  }

  @Test
  void aDuplicateRankAtAnotherStepIsWaitedOutThenNamesBothWorkers() {
    job(4, TP4, 5);
    publisher("intruder", 1, 2, new PublisherTopology(1, 4, TP4));
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY, new Discovery.Expectation(4, TP4), Duration.ofSeconds(3)));
    assertTrue(
        e.getMessage().contains("rank 1 is claimed by more than one publisher"), e.getMessage());
    assertTrue(
        e.getMessage().contains("'w1' (step 5)") && e.getMessage().contains("'intruder' (step 2)"),
        e.getMessage());
    assertEquals(3, ticker.sleeps.size(), "waited for the job to become consistent");
  }

  @Test
  void aDuplicateThatExpiresResolvesWithinTheTimeout() {
    job(2, "tp2", 5);
    publisher("old", 1, 4, new PublisherTopology(1, 2, "tp2"));
    store.heartbeat(IDENTITY, "old", SourceStatus.STALE);
    Discovery.Consistent c =
        discovery.awaitConsistent(
            IDENTITY, new Discovery.Expectation(2, "tp2"), Duration.ofSeconds(3));
    assertEquals(5L, c.step());
  }

  @Test
  void mixedStepsWaitThenFailNamingTheStepsSeen() {
    job(4, TP4, 7);
    publisher(
        "w2", 2, 6, new PublisherTopology(2, 4, TP4)); // rank 2 republished an older step in place
    InconsistentSourcesException e =
        assertThrows(
            InconsistentSourcesException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY, new Discovery.Expectation(4, TP4), Duration.ofSeconds(2)));
    assertTrue(
        e.getMessage().contains("mixed steps: step 6 from [w2] step 7 from [w0, w1, w3]"),
        e.getMessage());
    assertEquals(2, ticker.sleeps.size());
  }

  @Test
  void aMissingRankTimesOutNamingIt() {
    for (int r = 0; r < 3; r++) {
      publisher("w" + r, r, 0, new PublisherTopology(r, 4, TP4));
    }
    DiscoveryTimeoutException e =
        assertThrows(
            DiscoveryTimeoutException.class,
            () ->
                discovery.awaitConsistent(
                    IDENTITY, new Discovery.Expectation(4, TP4), Duration.ofSeconds(2)));
    assertTrue(
        String.valueOf(e.getCause()).contains("missing rank(s) [3]"), String.valueOf(e.getCause()));
  }

  @Test
  void theTopologyKeyRoundTripsAndOldTablesDecodeWithout() {
    ShardTable t =
        TestTables.table("a", 1, 1L, true).withTopology(new PublisherTopology(2, 4, "tp \"4\""));
    ShardTable back = ShardTableCodec.standard().decode(ShardTableCodec.standard().encode(t));
    assertEquals(new PublisherTopology(2, 4, "tp \"4\""), back.topology());
    ShardTable plain = TestTables.table("a", 1, 1L, true);
    assertEquals(
        null,
        ShardTableCodec.standard().decode(ShardTableCodec.standard().encode(plain)).topology());
    String json =
        new String(ShardTableCodec.standard().encode(t), java.nio.charset.StandardCharsets.UTF_8);
    String withoutKey =
        new String(
            ShardTableCodec.standard().encode(plain), java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(
        json.startsWith(withoutKey.substring(0, withoutKey.length() - 1)),
        "existing keys byte-identical");
  }

  @Test
  void theDiscoveryCostRecordIsValidJsonWithQuotesInNamesUnderAGermanLocale() throws Exception {
    java.util.Locale before = java.util.Locale.getDefault();
    try {
      java.util.Locale.setDefault(java.util.Locale.GERMANY);
      String json =
          Discovery.costRecord(
              "file:/tmp/a \"quoted\" dir", "model=\"m\";role=trainer", 4, 146, 2, 1_234_567_891L);
      com.fasterxml.jackson.core.JsonParser p =
          new com.fasterxml.jackson.core.JsonFactory().createParser(json);
      java.util.Map<String, String> fields = new java.util.LinkedHashMap<>();
      p.nextToken();
      while (p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
        String k = p.currentName();
        p.nextToken();
        fields.put(k, p.getText());
      }
      assertEquals("file:/tmp/a \"quoted\" dir", fields.get("store"));
      assertEquals("model=\"m\";role=trainer", fields.get("identity"));
      assertEquals(
          "1.234568", fields.get("elapsed_s"), "a decimal point, not a German comma: " + json);
      assertEquals("146", fields.get("tensors"));
    } finally {
      java.util.Locale.setDefault(before);
    }
  }
}
