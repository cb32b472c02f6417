package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.progress.StallWatch;
import dev.mx.metadata.progress.StalledPartyException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The waiter's rule, on a {@link FakeTicker}: a party counts as alive while its progress changes.
 */
class StallWatchTest {
  private static final Duration LIMIT = Duration.ofSeconds(30);
  private final FakeTicker ticker = new FakeTicker();
  private final StallWatch watch = new StallWatch(LIMIT, ticker);

  private static SourceRecord party(String slot, long progress, long heartbeat, String phase) {
    return new SourceRecord(
        "m#parties",
        slot,
        Integer.parseInt(slot),
        ("rank slot " + slot).getBytes(StandardCharsets.UTF_8),
        SourceStatus.READY,
        heartbeat,
        progress,
        phase);
  }

  @Test
  void aPartyWhoseProgressAdvancesIsWaitedOnFarBeyondTheStallLimit() {
    for (int i = 0; i < 100; i++) {
      watch.observe(List.of(party("0", i, 1000 + i, "writing step 0")));
      ticker.advance(Duration.ofSeconds(20));
      assertDoesNotThrow(() -> watch.check(List.of("0")), "beat " + i);
    }
  }

  @Test
  void aPartyWhoseHeartbeatsGoOnWithoutProgressFailsNamingItAndItsLastPhase() {
    watch.observe(List.of(party("2", 7, 1000, "digesting step 0, 3/40 shards")));
    for (int i = 1; i <= 3; i++) {
      ticker.advance(Duration.ofSeconds(10));
      // Fresh heartbeats with the same counter: a wedged worker whose heartbeat thread runs on.
      watch.observe(List.of(party("2", 7, 1000 + i, "digesting step 0, 3/40 shards")));
    }
    ticker.advance(Duration.ofSeconds(1));
    StalledPartyException e =
        assertThrows(StalledPartyException.class, () -> watch.check(List.of("2")));
    assertEquals("2", e.party());
    assertEquals("digesting step 0, 3/40 shards", e.lastPhase());
    assertTrue(
        e.getMessage().contains("rank slot 2")
            && e.getMessage().contains("digesting step 0, 3/40 shards")
            && e.getMessage().contains("31.0 s"),
        e.getMessage());
  }

  @Test
  void aRecordWithoutProgressCountsAsAliveWhileItsHeartbeatTimeChanges() {
    watch.observe(List.of(party("0", SourceRecord.NO_PROGRESS, 1000, "")));
    ticker.advance(Duration.ofSeconds(25));
    watch.observe(List.of(party("0", SourceRecord.NO_PROGRESS, 2000, "")));
    ticker.advance(Duration.ofSeconds(25));
    assertDoesNotThrow(() -> watch.check(List.of("0")));
    ticker.advance(Duration.ofSeconds(6));
    assertThrows(StalledPartyException.class, () -> watch.check(List.of("0")));
  }

  @Test
  void aPartyNeverSeenFailsOnlyOnceItsPeersWereSeenForTheStallLimit() {
    ticker.advance(Duration.ofMinutes(10));
    assertDoesNotThrow(() -> watch.check(List.of("0", "1")), "nobody seen: the cap decides");
    watch.observe(List.of(party("0", 1, 1000, "idle")));
    ticker.advance(Duration.ofSeconds(29));
    watch.observe(List.of(party("0", 2, 1001, "idle")));
    assertDoesNotThrow(() -> watch.check(List.of("0", "1")));
    ticker.advance(Duration.ofSeconds(2));
    watch.observe(List.of(party("0", 3, 1002, "idle")));
    StalledPartyException e =
        assertThrows(StalledPartyException.class, () -> watch.check(List.of("0", "1")));
    assertEquals("1", e.party());
    assertTrue(e.getMessage().contains("never heartbeated"), e.getMessage());
  }

  @Test
  void anUnreadableStoreStopsEveryPartyAndTheFailureSaysWhy() {
    watch.sample(() -> List.of(party("0", 1, 1000, "writing step 1")));
    ticker.advance(Duration.ofSeconds(31));
    watch.sample(
        () -> {
          throw new MetadataStoreException("redis://h:6379", "connection refused");
        });
    StalledPartyException e =
        assertThrows(StalledPartyException.class, () -> watch.check(List.of()));
    assertTrue(
        e.getMessage().contains("connection refused") && e.getMessage().contains("writing step 1"),
        e.getMessage());
  }
}
