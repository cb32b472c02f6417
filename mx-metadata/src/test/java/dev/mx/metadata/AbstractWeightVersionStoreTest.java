package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.VersionLease;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionException.Reason;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The semantics every {@link WeightVersionStore} shares (docs/VERSIONS.md), run once per backend
 * against the real thing: a JVM-wide directory, a folder, a redis-server started by the test. Each
 * test uses its own model, so backends may share one server across tests.
 */
abstract class AbstractWeightVersionStoreTest {
  static final Duration SHORT_TTL = Duration.ofMillis(400);
  static final Duration LONG_TTL = Duration.ofSeconds(60);

  /**
   * A store; every call within one test opens one on the same underlying directory, folder or
   * server.
   */
  protected abstract MetadataStore openStore();

  protected MetadataStore store;
  protected WeightVersionStore versions;
  protected String model;
  private final List<MetadataStore> opened = new ArrayList<>();

  @BeforeEach
  void openFirstStore() {
    model = "model=versions/" + UUID.randomUUID();
    store = open();
    versions = store.versions();
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

  static byte[] table(String slot, long step) {
    return TestTables.blob("trainer-" + slot + "-step-" + step, 2);
  }

  static VersionSlot slot(String version, String slot, String worker, long step) {
    return VersionSlot.of(version, slot, worker, table(slot, step));
  }

  private static List<String> slots(int n) {
    return IntStream.range(0, n).mapToObj(Integer::toString).toList();
  }

  private WeightVersion readyVersion(String id, long step, int slots) {
    versions.createVersion(model, id, step, slots(slots));
    WeightVersion v = null;
    for (String s : slots(slots)) {
      v = versions.publishSlot(model, slot(id, s, "w" + s, step));
    }
    assertEquals(WeightVersionState.READY, v.state());
    return v;
  }

  private static WeightVersionException refused(
      Reason reason, org.junit.jupiter.api.function.Executable call) {
    WeightVersionException e = assertThrows(WeightVersionException.class, call);
    assertEquals(reason, e.reason(), e.getMessage());
    return e;
  }

  @Test
  void aVersionIsReadyExactlyWhenItsLastExpectedSlotLandsNeverBefore() {
    WeightVersion created = versions.createVersion(model, "v1", 7, List.of("2", "0", "1"));
    assertEquals(WeightVersionState.STAGING, created.state());
    assertEquals(List.of("0", "1", "2"), created.expectedSlots());
    assertEquals(7, created.step());
    assertEquals(model, created.model());

    WeightVersion after0 = versions.publishSlot(model, slot("v1", "0", "w0", 7));
    assertEquals(WeightVersionState.STAGING, after0.state());
    assertEquals(List.of("1", "2"), after0.missingSlots());
    refused(Reason.WRONG_STATE, () -> versions.acquireLease(model, "v1", "r0", LONG_TTL));
    WeightVersion after2 = versions.publishSlot(model, slot("v1", "2", "w2", 7));
    assertEquals(WeightVersionState.STAGING, after2.state());
    assertEquals(WeightVersionState.STAGING, versions.version(model, "v1").orElseThrow().state());
    assertFalse(versions.latestReadable(model).isPresent(), "a STAGING version is never readable");

    WeightVersion last = versions.publishSlot(model, slot("v1", "1", "w1", 7));
    assertEquals(WeightVersionState.READY, last.state());
    assertEquals(List.of(), last.missingSlots());
    assertTrue(last.isReadable());
    assertEquals(WeightVersionState.READY, versions.version(model, "v1").orElseThrow().state());
    assertEquals(Optional.of("v1"), versions.latestReadable(model).map(WeightVersion::id));

    List<VersionSlot> landed = versions.slots(model, "v1");
    assertEquals(List.of("0", "1", "2"), landed.stream().map(VersionSlot::slot).toList());
    for (VersionSlot s : landed) {
      assertArrayEquals(table(s.slot(), 7), s.table(), "table of slot " + s.slot());
      assertEquals("w" + s.slot(), s.workerId());
      assertEquals(VersionSlot.sha256Hex(table(s.slot(), 7)), s.tableDigest());
      assertEquals(SlotStatus.READY, s.status());
      assertTrue(s.verified(model).digestMatches());
    }
  }

  @Test
  void concurrentSlotPublicationsTurnTheVersionReadyExactlyOnce() throws Exception {
    int n = 8;
    for (int round = 0; round < 3; round++) {
      String id = "concurrent-" + round;
      versions.createVersion(model, id, round, slots(n));
      List<MetadataStore> stores = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        stores.add(open()); // one client per publisher, as across processes
      }
      CountDownLatch go = new CountDownLatch(1);
      ExecutorService pool = Executors.newFixedThreadPool(n);
      try {
        List<Future<WeightVersion>> results = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          String s = Integer.toString(i);
          WeightVersionStore own = stores.get(i).versions();
          long step = round;
          results.add(
              pool.submit(
                  () -> {
                    go.await();
                    return own.publishSlot(model, slot(id, s, "w" + s, step));
                  }));
        }
        go.countDown();
        int readyAnswers = 0;
        for (Future<WeightVersion> f : results) {
          WeightVersion v = f.get(30, TimeUnit.SECONDS);
          if (v.state() == WeightVersionState.READY) {
            readyAnswers++;
            assertEquals(List.of(), v.missingSlots(), "READY only with every slot landed");
          } else {
            assertFalse(v.missingSlots().isEmpty(), "STAGING answers still miss a slot: " + v);
          }
        }
        assertEquals(1, readyAnswers, "exactly the call that landed the last slot sees READY");
        assertEquals(n, versions.slots(model, id).size());
        assertTrue(versions.version(model, id).orElseThrow().isReadable());
      } finally {
        pool.shutdownNow();
      }
    }
  }

  @Test
  void twoPublishersClaimingOneSlotConflictAndAnIdenticalRepublishIsANoOp() {
    versions.createVersion(model, "v", 1, slots(2));
    versions.publishSlot(model, slot("v", "0", "trainer-a", 1));
    WeightVersionException other =
        refused(Reason.CONFLICT, () -> versions.publishSlot(model, slot("v", "0", "trainer-b", 1)));
    assertTrue(
        other.getMessage().contains("'trainer-a'") && other.getMessage().contains("'trainer-b'"),
        other.getMessage());
    refused(Reason.CONFLICT, () -> versions.publishSlot(model, slot("v", "0", "trainer-a", 2)));
    WeightVersion again = versions.publishSlot(model, slot("v", "0", "trainer-a", 1));
    assertEquals(WeightVersionState.STAGING, again.state());
    assertEquals(1, versions.slots(model, "v").size());
    assertEquals("trainer-a", versions.slots(model, "v").get(0).workerId());
    assertArrayEquals(
        table("0", 1), versions.slots(model, "v").get(0).table(), "the first claim's table stays");
  }

  @Test
  void aTableDigestMismatchIsRejectedOnPublishAndOnRead() {
    versions.createVersion(model, "v", 1, slots(1));
    byte[] t = table("0", 1);
    VersionSlot lying =
        new VersionSlot("v", "0", "w0", t, VersionSlot.sha256Hex(table("0", 2)), SlotStatus.READY);
    WeightVersionException e =
        refused(Reason.DIGEST_MISMATCH, () -> versions.publishSlot(model, lying));
    assertTrue(
        e.getMessage().contains("slot '0'") && e.getMessage().contains("'w0'"), e.getMessage());
    assertEquals(List.of(), versions.slots(model, "v"), "nothing of a refused slot is stored");
    assertEquals(WeightVersionState.STAGING, versions.version(model, "v").orElseThrow().state());

    versions.publishSlot(model, slot("v", "0", "w0", 1));
    VersionSlot fetched = versions.slots(model, "v").get(0);
    byte[] tampered = fetched.table();
    tampered[tampered.length / 2] ^= 0x20;
    VersionSlot onTheWire =
        new VersionSlot("v", "0", "w0", tampered, fetched.tableDigest(), SlotStatus.READY);
    WeightVersionException read = refused(Reason.DIGEST_MISMATCH, () -> onTheWire.verified(model));
    assertTrue(
        read.getMessage().contains("version 'v'")
            && read.getMessage().contains(fetched.tableDigest()),
        read.getMessage());
  }

  @Test
  void anExpiredLeaseFreesTheVersionAfterItsTtl() throws InterruptedException {
    readyVersion("v", 3, 2);
    VersionLease lease = versions.acquireLease(model, "v", "receiver-dead", SHORT_TTL);
    assertEquals("receiver-dead", lease.holder());
    assertEquals(List.of("receiver-dead"), holders(versions.leases(model, "v")));
    versions.release(model, "v");
    Reclaim blocked = versions.reclaim(model, "v", "0", "w0");
    assertFalse(blocked.granted());
    assertEquals(List.of("receiver-dead"), blocked.holders());
    assertEquals(WeightVersionState.RELEASING, blocked.state());

    // The receiver died: nobody renews. After the TTL the lease is gone and the memory free.
    Reclaim r = blocked;
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!r.granted() && System.nanoTime() < deadline) {
      Thread.sleep(50);
      r = versions.reclaim(model, "v", "0", "w0");
    }
    assertTrue(r.granted(), "reclaim granted once the lease expired");
    assertEquals(List.of(), versions.leases(model, "v"));
    refused(Reason.LEASE_LOST, () -> versions.renewLease(model, "v", "receiver-dead", SHORT_TTL));
    assertEquals(
        List.of("1"),
        versions.slots(model, "v").stream().map(VersionSlot::slot).toList(),
        "slot 0 was reclaimed, slot 1 still held");
    assertTrue(versions.reclaim(model, "v", "1", "w1").granted());
    assertEquals(
        Optional.empty(), versions.version(model, "v"), "the last reclaim deletes the version");
    assertEquals(List.of(), versions.versions(model));
    assertTrue(
        versions.reclaim(model, "v", "1", "w1").granted(), "reclaiming a gone version is granted");
  }

  @Test
  void releasingWithALiveLeaseBlocksReuseUntilTheLeaseIsDropped() {
    readyVersion("v", 4, 2);
    Reclaim notReleased = versions.reclaim(model, "v", "0", "w0");
    assertFalse(notReleased.granted(), "a READY version is never reclaimed");
    assertEquals(WeightVersionState.READY, notReleased.state());

    versions.acquireLease(model, "v", "receiver-0", LONG_TTL);
    WeightVersion releasing = versions.release(model, "v");
    assertEquals(WeightVersionState.RELEASING, releasing.state());
    assertEquals(
        WeightVersionState.RELEASING,
        versions.release(model, "v").state(),
        "release is idempotent");
    refused(Reason.WRONG_STATE, () -> versions.acquireLease(model, "v", "receiver-1", LONG_TTL));
    VersionLease renewed = versions.renewLease(model, "v", "receiver-0", LONG_TTL);
    assertEquals("receiver-0", renewed.holder());
    versions.acquireLease(
        model, "v", "receiver-0", LONG_TTL); // the holder may renew through acquire too
    refused(Reason.WRONG_STATE, () -> versions.publishSlot(model, slot("v", "0", "w0", 4)));

    for (int i = 0; i < 3; i++) {
      Reclaim r = versions.reclaim(model, "v", "0", "w0");
      assertFalse(r.granted());
      assertEquals(List.of("receiver-0"), r.holders());
    }
    assertEquals(2, versions.slots(model, "v").size(), "a refused reclaim removes nothing");
    assertTrue(versions.dropLease(model, "v", "receiver-0"));
    assertFalse(versions.dropLease(model, "v", "receiver-0"));
    assertTrue(versions.reclaim(model, "v", "0", "w0").granted());
    WeightVersionException notOwner =
        refused(Reason.CONFLICT, () -> versions.reclaim(model, "v", "1", "w0"));
    assertTrue(notOwner.getMessage().contains("'w1'"), notOwner.getMessage());
  }

  @Test
  void aStaleSlotMakesTheVersionUnreadableAndOnlyItsOwnerMarksIt() {
    readyVersion("v1", 1, 2);
    readyVersion("v2", 2, 2);
    assertEquals("v2", versions.latestReadable(model).orElseThrow().id());
    refused(Reason.CONFLICT, () -> versions.markSlotStale(model, "v2", "1", "w0"));
    versions.markSlotStale(model, "v2", "1", "w1");
    WeightVersion v2 = versions.version(model, "v2").orElseThrow();
    assertEquals(WeightVersionState.READY, v2.state());
    assertEquals(List.of("1"), v2.staleSlots());
    assertFalse(v2.isReadable());
    assertEquals(
        "v1",
        versions.latestReadable(model).orElseThrow().id(),
        "the newest readable version is v1");
    versions.markSlotStale(model, "gone", "1", "w1"); // a vanished version: nothing to do

    // Once released, the live publisher's reclaim deletes the version: a STALE slot keeps nothing
    // alive.
    versions.release(model, "v2");
    assertTrue(versions.reclaim(model, "v2", "0", "w0").granted());
    assertEquals(Optional.empty(), versions.version(model, "v2"));
  }

  @Test
  void createIsIdempotentAndOtherMistakesAreNamed() {
    WeightVersion a = versions.createVersion(model, "v", 5, List.of("0", "1"));
    WeightVersion b = open().versions().createVersion(model, "v", 5, List.of("1", "0"));
    assertEquals(a, b, "every publisher of a step may create its version");
    refused(Reason.CONFLICT, () -> versions.createVersion(model, "v", 6, List.of("0", "1")));
    refused(Reason.CONFLICT, () -> versions.createVersion(model, "v", 5, List.of("0", "1", "2")));
    WeightVersionException unknown =
        refused(Reason.UNKNOWN_SLOT, () -> versions.publishSlot(model, slot("v", "7", "w7", 5)));
    assertTrue(unknown.getMessage().contains("'7'"), unknown.getMessage());
    refused(Reason.NOT_FOUND, () -> versions.publishSlot(model, slot("nope", "0", "w0", 5)));
    refused(Reason.NOT_FOUND, () -> versions.acquireLease(model, "nope", "r", LONG_TTL));
    refused(Reason.NOT_FOUND, () -> versions.release(model, "nope"));
    assertThrows(
        IllegalArgumentException.class, () -> versions.createVersion(model, "w", 1, List.of()));
    assertThrows(
        IllegalArgumentException.class,
        () -> versions.createVersion(model, "w", 1, List.of("0", "0")));
    assertThrows(
        IllegalArgumentException.class,
        () -> versions.acquireLease(model, "v", "r", Duration.ZERO));
    assertEquals(Optional.empty(), versions.version(model, "nope"));
    assertEquals(List.of(), versions.slots(model, "nope"));
  }

  @Test
  void versionsAreListedByStepAndSharedBetweenStoreInstances() {
    readyVersion("b", 2, 1);
    versions.createVersion(model, "a", 1, slots(1));
    readyVersion("c", 10, 1);
    WeightVersionStore other = open().versions();
    assertEquals(
        List.of("a", "b", "c"), other.versions(model).stream().map(WeightVersion::id).toList());
    assertEquals(
        List.of(1L, 2L, 10L), other.versions(model).stream().map(WeightVersion::step).toList());
    assertEquals(WeightVersionState.STAGING, other.version(model, "a").orElseThrow().state());
    other.acquireLease(model, "c", "r", LONG_TTL);
    assertEquals(List.of("r"), holders(versions.leases(model, "c")));
    assertEquals(List.of(), versions.versions(model + "-other"), "models are separate");
  }

  private static List<String> holders(List<VersionLease> leases) {
    return leases.stream().map(VersionLease::holder).toList();
  }
}
