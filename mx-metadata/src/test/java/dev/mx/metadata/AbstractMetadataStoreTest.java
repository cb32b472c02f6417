package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.testing.Eventually;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every {@link MetadataStore} shares (ModelExpress; ARCHITECTURE §7.5), run once per
 * backend. Each test uses its own identity, so backends may share one server across tests.
 */
abstract class AbstractMetadataStoreTest {
  static final Duration FRESH = Duration.ofSeconds(90);

  /**
   * A store; within one test every call returns a store on the same underlying directory (same
   * name, same folder, same server) so that two instances can be checked to share state.
   */
  protected abstract MetadataStore openStore();

  protected MetadataStore store;
  protected String identity;
  private final List<MetadataStore> opened = new ArrayList<>();

  @BeforeEach
  void openFirstStore() {
    identity = "model=test/" + UUID.randomUUID() + ";role=trainer";
    store = open();
  }

  protected MetadataStore open() {
    MetadataStore s = openStore();
    opened.add(s);
    return s;
  }

  @AfterEach
  void closeStores() {
    opened.reversed().forEach(MetadataStore::close);
  }

  private SourceRecord record(String worker, int rank, byte[] blob) {
    return new SourceRecord(identity, worker, rank, blob, SourceStatus.READY, 0);
  }

  private static List<String> workers(List<SourceRecord> records) {
    return records.stream().map(SourceRecord::workerId).toList();
  }

  @Test
  void aHeartbeatCarriesProgressAndPhaseAndAPlainHeartbeatKeepsThem() {
    store.publish(record("w", 3, TestTables.blob("a", 1)));
    store.heartbeat(identity, "w", SourceStatus.READY);
    SourceRecord before = store.listReady(identity, FRESH).getFirst();
    assertEquals(SourceRecord.NO_PROGRESS, before.progress(), "none reported yet");
    assertEquals("", before.phase());
    store.heartbeat(identity, "w", SourceStatus.READY, 41, "writing step 3, 40 %");
    for (SourceRecord r :
        List.of(
            store.listReady(identity, FRESH).getFirst(),
            store.listReady(identity, FRESH, false).getFirst(),
            store.get(identity, "w").orElseThrow())) {
      assertEquals(41, r.progress(), r.toString());
      assertEquals("writing step 3, 40 %", r.phase(), r.toString());
      assertEquals(3, r.rank());
    }
    store.heartbeat(identity, "w", SourceStatus.READY);
    SourceRecord kept = store.get(identity, "w").orElseThrow();
    assertEquals(41, kept.progress(), "a heartbeat without progress keeps the last one");
    assertEquals("writing step 3, 40 %", kept.phase());
  }

  @Test
  void aPublishedSourceIsListedOnlyAfterItsFirstHeartbeat() {
    store.publish(record("w0", 0, TestTables.blob("a0", 2)));
    assertEquals(
        List.of(), store.listReady(identity, FRESH), "updated_at is 0 until the first heartbeat");
    store.heartbeat(identity, "w0", SourceStatus.READY);
    List<SourceRecord> ready = store.listReady(identity, FRESH);
    assertEquals(List.of("w0"), workers(ready));
    SourceRecord r = ready.get(0);
    assertEquals(identity, r.identity());
    assertEquals(0, r.rank());
    assertEquals(SourceStatus.READY, r.status());
    assertTrue(r.updatedAtMillis() > 0, "heartbeat time is stamped");
    assertArrayEquals(TestTables.blob("a0", 2), r.blob());
  }

  @Test
  void getReturnsTheRecordWithItsBlobAndEmptyForUnknownWorkers() {
    byte[] blob = TestTables.blob("a3", 3);
    store.publish(record("w3", 3, blob));
    SourceRecord got = store.get(identity, "w3").orElseThrow();
    assertArrayEquals(blob, got.blob());
    assertEquals(3, got.rank());
    assertEquals(0, got.updatedAtMillis());
    assertEquals(Optional.empty(), store.get(identity, "nobody"));
    assertEquals(Optional.empty(), store.get("another identity", "w3"));
  }

  @Test
  void listingIsNewestHeartbeatFirst() throws InterruptedException {
    for (String w : new String[] {"a", "b", "c"}) {
      store.publish(record(w, 0, TestTables.blob(w, 1)));
    }
    for (String w : new String[] {"a", "b", "c"}) {
      store.heartbeat(identity, w, SourceStatus.READY);
      Thread.sleep(15);
    }
    assertEquals(List.of("c", "b", "a"), workers(store.listReady(identity, FRESH)));
    store.heartbeat(identity, "a", SourceStatus.READY);
    assertEquals(List.of("a", "c", "b"), workers(store.listReady(identity, FRESH)));
  }

  @Test
  void staleSourcesAreExcludedUntilTheyHeartbeatReadyAgain() {
    store.publish(record("w", 0, TestTables.blob("a", 1)));
    store.publish(record("v", 1, TestTables.blob("b", 1)));
    store.heartbeat(identity, "w", SourceStatus.READY);
    store.heartbeat(identity, "v", SourceStatus.READY);
    store.heartbeat(identity, "w", SourceStatus.STALE);
    assertEquals(List.of("v"), workers(store.listReady(identity, FRESH)));
    assertEquals(
        SourceStatus.STALE,
        store.get(identity, "w").orElseThrow().status(),
        "still readable by get");
    store.heartbeat(identity, "w", SourceStatus.READY);
    assertEquals(Set.of("v", "w"), Set.copyOf(workers(store.listReady(identity, FRESH))));
  }

  @Test
  void sourcesWhoseLastHeartbeatIsOlderThanTheFreshnessAreExcluded() {
    store.publish(record("w", 0, TestTables.blob("a", 1)));
    store.heartbeat(identity, "w", SourceStatus.READY);
    // Long enough that a loaded machine still lists the source right after its heartbeat.
    Duration freshness = Duration.ofMillis(1500);
    assertEquals(List.of("w"), workers(store.listReady(identity, freshness)));
    Eventually.await(
        Duration.ofSeconds(60),
        "the source to drop out once its heartbeat is older than " + freshness,
        () -> store.listReady(identity, freshness).isEmpty());
    assertEquals(List.of("w"), workers(store.listReady(identity, FRESH)), "fresh within 90 s");
    store.heartbeat(identity, "w", SourceStatus.READY);
    assertEquals(
        List.of("w"), workers(store.listReady(identity, freshness)), "a heartbeat revives it");
  }

  @Test
  void republishingReplacesTheBlobAndWaitsForTheNextHeartbeat() {
    store.publish(record("w", 0, TestTables.blob("old", 1)));
    store.heartbeat(identity, "w", SourceStatus.READY);
    byte[] fresh = TestTables.blob("new", 4);
    store.publish(record("w", 5, fresh));
    assertEquals(List.of(), store.listReady(identity, FRESH));
    assertArrayEquals(fresh, store.get(identity, "w").orElseThrow().blob());
    assertEquals(5, store.get(identity, "w").orElseThrow().rank());
    store.heartbeat(identity, "w", SourceStatus.READY);
    assertArrayEquals(fresh, store.listReady(identity, FRESH).get(0).blob());
  }

  @Test
  void blobLessListingKeepsOrderAndMetadataButCarriesNoBytes() throws InterruptedException {
    store.publish(record("x", 1, TestTables.blob("x", 2)));
    store.publish(record("y", 2, TestTables.blob("y", 2)));
    store.heartbeat(identity, "x", SourceStatus.READY);
    Thread.sleep(15);
    store.heartbeat(identity, "y", SourceStatus.READY);
    List<SourceRecord> refs = store.listReady(identity, FRESH, false);
    assertEquals(List.of("y", "x"), workers(refs));
    assertEquals(List.of(2, 1), refs.stream().map(SourceRecord::rank).toList());
    refs.forEach(r -> assertEquals(0, r.blob().length));
    List<SourceRecord> full = store.listReady(identity, FRESH, true);
    assertArrayEquals(TestTables.blob("y", 2), full.get(0).blob());
    assertEquals(refs.get(0).updatedAtMillis(), full.get(0).updatedAtMillis());
  }

  @Test
  void removeForgetsTheWorker() {
    store.publish(record("w", 0, TestTables.blob("a", 1)));
    store.heartbeat(identity, "w", SourceStatus.READY);
    store.remove(identity, "w");
    assertEquals(Optional.empty(), store.get(identity, "w"));
    assertEquals(List.of(), store.listReady(identity, FRESH));
    store.remove(identity, "w"); // removing twice is harmless
  }

  @Test
  void heartbeatOfAnUnknownWorkerFailsNamingIt() {
    MetadataStoreException e =
        assertThrows(
            MetadataStoreException.class,
            () -> store.heartbeat(identity, "ghost", SourceStatus.READY));
    assertTrue(e.getMessage().contains("ghost"), e.getMessage());
    assertEquals(store.uri(), e.store());
  }

  @Test
  void identitiesAreSeparateEvenForTheSameWorkerId() {
    String other = identity + "-inference";
    store.publish(record("w", 0, TestTables.blob("trainer", 1)));
    store.publish(
        new SourceRecord(other, "w", 9, TestTables.blob("receiver", 1), SourceStatus.READY, 0));
    store.heartbeat(identity, "w", SourceStatus.READY);
    assertEquals(List.of(), store.listReady(other, FRESH));
    assertEquals(9, store.get(other, "w").orElseThrow().rank());
    assertArrayEquals(TestTables.blob("trainer", 1), store.get(identity, "w").orElseThrow().blob());
  }

  @Test
  void namesWithSeparatorsAndUnicodeRoundTripWithoutColliding() {
    String[] names = {"a:b", "a", "b:c", "host/7:rank 3", "émetteur-ü", ".hidden", "%41"};
    for (int i = 0; i < names.length; i++) {
      store.publish(record(names[i], i, ("blob-" + i).getBytes(StandardCharsets.UTF_8)));
      store.heartbeat(identity, names[i], SourceStatus.READY);
    }
    for (int i = 0; i < names.length; i++) {
      SourceRecord r = store.get(identity, names[i]).orElseThrow();
      assertEquals(names[i], r.workerId());
      assertArrayEquals(("blob-" + i).getBytes(StandardCharsets.UTF_8), r.blob());
    }
    assertEquals(Set.of(names), Set.copyOf(workers(store.listReady(identity, FRESH))));
  }

  @Test
  void largeBlobsRoundTrip() {
    byte[] big = ShardTableCodec.standard().encode(TestTables.table("big", 8_000, 1L, true));
    assertTrue(big.length > 2_000_000, "a realistic large table: " + big.length + " bytes");
    store.publish(record("w", 0, big));
    assertArrayEquals(big, store.get(identity, "w").orElseThrow().blob());
  }

  @Test
  void twoInstancesOnTheSameUriShareState() {
    MetadataStore second = open();
    store.publish(record("w", 0, TestTables.blob("a", 1)));
    second.heartbeat(identity, "w", SourceStatus.READY);
    assertEquals(List.of("w"), workers(store.listReady(identity, FRESH)));
    assertEquals(store.uri(), second.uri());
  }

  @Test
  void closeIsIdempotentAndLaterCallsFailNamingTheStore() {
    MetadataStore s = open();
    s.close();
    s.close();
    MetadataStoreException e =
        assertThrows(MetadataStoreException.class, () -> s.listReady(identity, FRESH));
    assertTrue(
        e.getMessage().contains(s.uri()) && e.getMessage().contains("closed"), e.getMessage());
    assertThrows(MetadataStoreException.class, () -> s.publish(record("w", 0, new byte[1])));
  }

  @Test
  void argumentsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> store.publish(record("", 0, new byte[1])));
    assertThrows(IllegalArgumentException.class, () -> store.listReady(identity, Duration.ZERO));
  }

  @Test
  void concurrentWritersAndReadersNeverSeeATornTable() throws Exception {
    int writers = 3;
    int rounds = 20;
    ShardTableCodec codec = ShardTableCodec.standard();
    AtomicBoolean writing = new AtomicBoolean(true);
    ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
    AtomicInteger tablesRead = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int w = 0; w < writers; w++) {
      int id = w;
      // Writers 0 and 1 fight over the same worker id; writer 2 has its own.
      String worker = id < 2 ? "shared" : "own";
      threads.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      start.await();
                      for (int r = 0; r < rounds; r++) {
                        store.publish(
                            record(
                                worker,
                                id,
                                codec.encode(
                                    TestTables.table(
                                        "writer-" + id, 1 + (r % 5) * 20, (long) r, true))));
                        store.heartbeat(identity, worker, SourceStatus.READY);
                      }
                    } catch (Throwable t) {
                      failures.add(t);
                    }
                  }));
    }
    List<Thread> readers = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      MetadataStore readerStore = open();
      readers.add(
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      start.await();
                      while (writing.get()) {
                        for (SourceRecord r : readerStore.listReady(identity, FRESH)) {
                          ShardTable t = codec.decode(r.blob());
                          assertTrue(t.agentName().startsWith("writer-"), t.agentName());
                          tablesRead.incrementAndGet();
                        }
                        readerStore
                            .get(identity, "shared")
                            .ifPresent(
                                r -> {
                                  codec.decode(r.blob());
                                  tablesRead.incrementAndGet();
                                });
                      }
                    } catch (Throwable t) {
                      failures.add(t);
                    }
                  }));
    }
    start.countDown();
    for (Thread t : threads) {
      t.join();
    }
    writing.set(false);
    for (Thread t : readers) {
      t.join();
    }
    if (!failures.isEmpty()) {
      AssertionError e = new AssertionError(failures.size() + " concurrent failure(s)");
      failures.forEach(e::addSuppressed);
      throw e;
    }
    assertTrue(tablesRead.get() > 0, "readers read tables while writers wrote");
    ShardTable last = codec.decode(store.get(identity, "own").orElseThrow().blob());
    assertEquals(rounds - 1L, last.publisherStep(), "the last write wins");
  }
}
