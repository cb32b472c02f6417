package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.redis.RedisMetadataStore;
import dev.mx.testing.RedisExtension;
import dev.mx.testing.RedisServer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Discovery through a real Redis, and what happens when Redis dies in the middle of it. */
class RedisDiscoveryTest {
  private static final String IDENTITY = "model=redis-discovery;role=trainer";
  // One server per test: the test kills it.
  @RegisterExtension final RedisExtension redis = new RedisExtension();

  @Test
  void publishersAreFoundThenAKilledServerGivesRetriesAndTheTimeoutNamingTheStore()
      throws Exception {
    RedisServer server = redis.server();
    // A command timeout a loaded host meets (a 1 s one failed the healthy part under load 25):
    // once the server is killed, commands are refused at once, not timed out.
    try (ScriptedStore store =
        new ScriptedStore(
            new RedisMetadataStore(server.uri() + "?timeout=30s", Duration.ofSeconds(600)))) {
      for (String w : new String[] {"r0", "r1"}) {
        store.publish(
            new SourceRecord(
                IDENTITY, w, 0, TestTables.blob("agent-" + w, 2), SourceStatus.READY, 0));
        store.heartbeat(IDENTITY, w, SourceStatus.READY);
      }
      Discovery discovery = Discovery.on(store).withPollInterval(Duration.ofMillis(100));
      List<ShardTable> found = discovery.await(IDENTITY, 2, Duration.ofSeconds(10));
      assertEquals(
          List.of("agent-r0", "agent-r1"),
          found.stream().map(ShardTable::agentName).sorted().toList());

      server.kill();
      int listingsBefore = store.listings;
      DiscoveryTimeoutException e =
          assertThrows(
              DiscoveryTimeoutException.class,
              () -> discovery.await(IDENTITY, 3, Duration.ofSeconds(2)));
      assertEquals("redis://127.0.0.1:" + server.port(), e.store());
      assertTrue(
          e.getMessage()
              .startsWith(
                  "discovery on redis://127.0.0.1:" + server.port() + " timed out after 2.0 s"),
          e.getMessage());
      assertInstanceOf(MetadataStoreException.class, e.getCause(), "the dead store is the cause");
      assertTrue(
          store.listings - listingsBefore >= 3,
          "retried " + (store.listings - listingsBefore) + " times");
    }
  }
}
