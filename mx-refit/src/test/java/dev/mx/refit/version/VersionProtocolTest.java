package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.InconsistentSourcesException;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.metadata.StoreNames;
import dev.mx.metadata.file.FileMetadataStore;
import dev.mx.metadata.memory.MemoryMetadataStore;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Both sides of the version protocol in one JVM over real parts: {@code mem} transports between
 * native buffers, a real receiver with the real planner and digests, real {@code memory:} and
 * {@code file:} stores.
 */
class VersionProtocolTest {
  private static final Duration WAIT = Duration.ofSeconds(20);
  private final String model = "model=versions-" + UUID.randomUUID();
  private final Transport receiverTransport =
      new MemTransportProvider().create(TransportConfig.of("recv-" + model));
  private final LiveWeights live =
      new LiveWeights(Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
  @TempDir Path dir;
  private MetadataStore store;

  @AfterEach
  void close() {
    live.close();
    receiverTransport.close();
    if (store != null) {
      store.close();
    }
  }

  private VersionFollower follower(String holder) {
    return follower(holder, null);
  }

  private VersionFollower follower(String holder, Discovery.Expectation expectation) {
    RecordedCopy whole =
        new RecordedCopy(
            "w", List.of(), "p", 0, TwoRankTrainer.GLOBAL, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(whole)),
            Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
    return VersionFollower.builder(store, model)
        .holder(holder)
        .leaseTtl(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(20))
        .installer(live)
        .expect(expectation)
        .receivers(
            TestReceivers.of(
                receiverTransport,
                capture,
                ReceiverConfig.defaults()
                    .withVerify(VerifyMode.WHOLE_SHARDS)
                    .withTimeout(Duration.ofSeconds(10))))
        .build();
  }

  private float[] installed() {
    return live.parameter("p").toArray(ValueLayout.JAVA_FLOAT);
  }

  private static float[] expected(long step) {
    float[] v = new float[16];
    for (int i = 0; i < 16; i++) {
      v[i] = TwoRankTrainer.value(step, i);
    }
    return v;
  }

  @Test
  void aFollowerInstallsEveryStepInOrderFromAlternatingBufferSets() {
    store = new MemoryMetadataStore(model);
    WeightVersionStore versions = store.versions();
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower("receiver-0")) {
      for (long step = 0; step < 5; step++) {
        WeightVersion first = trainer.publish(0, step);
        assertEquals(WeightVersionState.STAGING, first.state(), "one of two slots landed");
        WeightVersion last = trainer.publish(1, step);
        assertEquals(
            WeightVersionState.READY,
            last.state(),
            "the second slot makes step " + step + " READY");
        VersionFollower.Followed f = follower.next(WAIT);
        assertEquals(step, f.step(), "steps arrive in order");
        assertEquals("step-" + step, f.version().id());
        assertEquals(step, f.metrics().get("step"));
        assertArrayEquals(expected(step), installed(), "installed values of step " + step);
        assertEquals(step, follower.lastStep());
        assertEquals(
            List.of(),
            versions.leases(model, "step-" + step),
            "the lease is dropped after install");
        assertEquals(
            Math.min(step + 1, 2),
            follower.receiverCount(),
            "one prepared receiver per buffer set");
        int set = (int) (step % 2);
        assertEquals("step-" + step, trainer.ranks.get(0).heldVersions().get(set));
        if (step >= 2) {
          assertEquals(
              Optional.empty(),
              versions.version(model, "step-" + (step - 2)),
              "both ranks reclaimed step " + (step - 2) + " before overwriting its buffer set");
        }
      }
      assertEquals(
          List.of("step-3", "step-4"),
          versions.versions(model).stream().map(WeightVersion::id).toList());
      assertEquals(
          WeightVersionState.READY,
          versions.version(model, "step-3").orElseThrow().state(),
          "a superseded version is released only when its buffer set is needed again");
    }
  }

  @Test
  void versionWaitsAndLeasesAreRecordedAsJfrEvents(@TempDir Path dir) throws Exception {
    store = new MemoryMetadataStore(model);
    Path file = dir.resolve("versions.jfr");
    try (Recording rec = new Recording()) {
      rec.enable("dev.mx.VersionWait").withThreshold(Duration.ZERO);
      rec.enable("dev.mx.Lease").withThreshold(Duration.ZERO);
      rec.start();
      try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
          VersionFollower follower = follower("receiver-0")) {
        for (long step = 0; step < 2; step++) {
          trainer.publishAll(step);
          assertEquals(step, follower.next(WAIT).step());
        }
      }
      rec.stop();
      rec.dump(file);
    }
    List<RecordedEvent> events = RecordingFile.readAllEvents(file);
    List<RecordedEvent> waits =
        events.stream()
            .filter(e -> e.getEventType().getName().equals("dev.mx.VersionWait"))
            .toList();
    assertEquals(List.of(0L, 1L), waits.stream().map(e -> e.getLong("step")).toList());
    waits.forEach(e -> assertEquals(model, e.getString("model")));
    List<String> leases =
        events.stream()
            .filter(e -> e.getEventType().getName().equals("dev.mx.Lease"))
            .filter(e -> e.getString("holder").equals("receiver-0"))
            .map(e -> e.getString("versionId") + " " + e.getString("action"))
            .toList();
    assertEquals(
        List.of("step-0 acquired", "step-0 released", "step-1 acquired", "step-1 released"),
        leases);
  }

  @Test
  void whenTheOtherBufferSetStaysLeasedPublishFailsNamingTheHoldersAndAnExpiredLeaseFreesIt() {
    store = new MemoryMetadataStore(model);
    WeightVersionStore versions = store.versions();
    try (TwoRankTrainer trainer =
        new TwoRankTrainer(store, model, Duration.ofMillis(300), b -> {})) {
      trainer.publishAll(0);
      trainer.publishAll(1);
      versions.acquireLease(model, "step-0", "slow-receiver", Duration.ofSeconds(60));
      AtomicBoolean wrote = new AtomicBoolean();
      BuffersLeasedException e =
          assertThrows(
              BuffersLeasedException.class,
              () -> trainer.ranks.get(0).publish(2, set -> wrote.set(true)));
      assertFalse(wrote.get(), "nothing is written into a leased set");
      assertEquals("step-0", e.versionId());
      assertEquals(List.of("slow-receiver"), e.holders());
      assertTrue(
          e.getMessage().contains("'step-0'")
              && e.getMessage().contains("slow-receiver")
              && e.getMessage().contains("'step-1'"),
          e.getMessage());
      assertEquals(
          WeightVersionState.RELEASING, versions.version(model, "step-0").orElseThrow().state());
      assertTrue(
          versions.version(model, "step-1").orElseThrow().isReadable(),
          "the newest version is untouched");

      versions.dropLease(model, "step-0", "slow-receiver");
      assertEquals(
          WeightVersionState.READY,
          trainer.publishAll(2).state(),
          "retried once the lease is dropped");
      assertEquals(Optional.empty(), versions.version(model, "step-0"));

      // A receiver that dies holding a lease: the trainer proceeds after the TTL.
      versions.acquireLease(model, "step-1", "dead-receiver", Duration.ofMillis(400));
      VersionedPublisher rank0 = trainer.ranks.get(0);
      WeightVersion v3 = null;
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (v3 == null && System.nanoTime() < deadline) {
        try {
          v3 = trainer.publish(0, 3);
        } catch (BuffersLeasedException stillLeased) {
          assertEquals(List.of("dead-receiver"), stillLeased.holders());
        }
      }
      assertEquals("step-3", v3.id(), rank0.heldVersions().toString());
      assertEquals(WeightVersionState.READY, trainer.publish(1, 3).state());
    }
  }

  @Test
  void aStaleSlotIsSkippedAndTheFollowerWaitsForTheNextVersionOrFailsNamingIt() {
    store = new MemoryMetadataStore(model);
    WeightVersionStore versions = store.versions();
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower("receiver-0")) {
      trainer.publishAll(0);
      assertEquals(0, follower.next(WAIT).step());
      trainer.publishAll(1);
      versions.markSlotStale(model, "step-1", "1", "trainer-1"); // rank 1 is going away
      NoReadableVersionException e =
          assertThrows(
              NoReadableVersionException.class, () -> follower.next(Duration.ofMillis(300)));
      assertTrue(
          e.getMessage().contains("'step-1'")
              && e.getMessage().contains("stale slots=[1]")
              && e.getMessage().contains("newer than step 0"),
          e.getMessage());
      assertArrayEquals(
          expected(0), installed(), "the receiver stays on its last complete version");
      trainer.publishAll(2);
      VersionFollower.Followed f = follower.next(WAIT);
      assertEquals(2, f.step(), "the next READY version after the stale one");
      assertArrayEquals(expected(2), installed());
    }
  }

  /**
   * Lands step 0's tables, re-encoded as ModelExpress's trainer adapters write them (no {@code
   * publisher_step}, no topology) or with {@code step} as their step, in a new version {@code id}
   * of step {@code versionStep}, as a ModelExpress orchestrator creates one.
   */
  private void republishStepZero(String id, long versionStep, Long tableStep) {
    WeightVersionStore versions = store.versions();
    versions.createVersion(model, id, versionStep, TwoRankTrainer.SLOTS);
    ShardTableCodec codec = ShardTableCodec.standard();
    for (VersionSlot s : versions.slots(model, "step-0")) {
      ShardTable t = codec.decode(s.verified(model).table());
      ShardTable as =
          new ShardTable(
              t.agentName(),
              t.metadataEndpoint(),
              t.agentMetadata(),
              t.tensors(),
              tableStep,
              null,
              t.replicas());
      versions.publishSlot(model, VersionSlot.of(id, s.slot(), s.workerId(), codec.encode(as)));
    }
  }

  @Test
  void aVersionNamedByItsIdIsInstalledThoughItsTablesCarryNoStepAsModelExpressAdaptersWriteThem() {
    store = new MemoryMetadataStore(model);
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower("receiver-0")) {
      trainer.publishAll(0);
      republishStepZero("uid-7f3a", 7, null);
      VersionFollower.Followed f = follower.followVersion("uid-7f3a", WAIT);
      assertEquals("uid-7f3a", f.version().id());
      assertEquals(7, f.step(), "the version's step, not a table's");
      assertArrayEquals(expected(0), installed(), "the bytes the tables point at");
      assertEquals(7, follower.lastStep());
      assertEquals(List.of(), store.versions().leases(model, "uid-7f3a"), "the lease is dropped");

      // A version that is not newer than the installed step is refused at once, naming both.
      republishStepZero("uid-older", 5, null);
      NoReadableVersionException older =
          assertThrows(
              NoReadableVersionException.class, () -> follower.followVersion("uid-older", WAIT));
      assertTrue(
          older.getMessage().contains("version 'uid-older'")
              && older.getMessage().contains("is not newer than the installed step 7"),
          older.getMessage());

      // A table that names a step must name the version's.
      republishStepZero("uid-9", 9, 0L);
      NoReadableVersionException torn =
          assertThrows(
              NoReadableVersionException.class, () -> follower.followVersion("uid-9", WAIT));
      assertTrue(
          torn.getMessage().contains("carries a table of step 0, not the version's step 9"),
          torn.getMessage());
      assertEquals(7, follower.lastStep(), "nothing of the refused version was installed");

      // An id the store does not know is waited for up to the cap, then named.
      NoReadableVersionException unknown =
          assertThrows(
              NoReadableVersionException.class,
              () -> follower.followVersion("uid-nowhere", Duration.ofMillis(200)));
      assertTrue(
          unknown
              .getMessage()
              .contains("version 'uid-nowhere': the store holds no version with this id"),
          unknown.getMessage());
    }
  }

  @Test
  void aTableWhoseBytesDoNotMatchItsDigestIsRefusedAndNothingIsInstalled() throws Exception {
    store = new FileMetadataStore(dir);
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower("receiver-0")) {
      trainer.publishAll(0);
      assertEquals(0, follower.next(WAIT).step());
      trainer.publishAll(1);
      Path table =
          dir.resolve(".versions")
              .resolve(StoreNames.encode(model))
              .resolve("step-1")
              .resolve("slot-0.table");
      String json = Files.readString(table);
      assertTrue(json.contains("\"addr\""), json);
      Files.writeString(table, json.replace("\"addr\":", "\"addr\": ")); // same table, other bytes
      NoReadableVersionException e =
          assertThrows(
              NoReadableVersionException.class, () -> follower.next(Duration.ofMillis(500)));
      assertTrue(
          e.getMessage().contains("SHA-256")
              && e.getMessage().contains("slot '0'")
              && e.getMessage().contains("'trainer-0'"),
          e.getMessage());
      assertArrayEquals(expected(0), installed(), "nothing of the refused version was installed");
      assertEquals(0, follower.lastStep());
    }
  }

  @Test
  void aRankWritesTheNextStepOnlyOnceItsPeersLandedThePreviousOneAndGivesUpAfterTheWait()
      throws Exception {
    store = new MemoryMetadataStore(model);
    WeightVersionStore versions = store.versions();
    java.util.concurrent.ExecutorService pool =
        java.util.concurrent.Executors.newSingleThreadExecutor();
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {})) {
      trainer.publish(0, 0);
      AtomicBoolean wrote = new AtomicBoolean();
      java.util.concurrent.Future<WeightVersion> ahead =
          pool.submit(
              () ->
                  trainer
                      .ranks
                      .get(0)
                      .publish(
                          1,
                          set -> {
                            wrote.set(true);
                            trainer.sets[0][set].fill((byte) 0);
                          }));
      Thread.sleep(300);
      assertFalse(ahead.isDone(), "rank 0 waits for rank 1 to land step 0");
      assertFalse(wrote.get(), "and writes nothing meanwhile");
      assertEquals(
          WeightVersionState.READY,
          trainer.publish(1, 0).state(),
          "rank 1's slot makes step 0 READY");
      assertEquals("step-1", ahead.get(20, java.util.concurrent.TimeUnit.SECONDS).id());
      assertTrue(wrote.get());
      assertTrue(
          versions.version(model, "step-0").orElseThrow().isReadable(), "step 0 stays readable");
    } finally {
      pool.shutdownNow();
    }
    try (TwoRankTrainer impatient =
        new TwoRankTrainer(store, model + "-2", Duration.ofMillis(200), b -> {})) {
      impatient.publish(0, 0);
      assertEquals(
          WeightVersionState.STAGING, impatient.publish(0, 1).state(), "goes on after the wait");
      assertEquals(WeightVersionState.STAGING, impatient.publish(0, 2).state());
      assertEquals(
          Optional.empty(),
          versions.version(model + "-2", "step-0"),
          "the abandoned version is gone");
    }
  }

  @Test
  void aPublisherWhoseMemoryVanishesWhileReadIsNeverInstalledAndTheFailureIsNamed() {
    store = new MemoryMetadataStore(model);
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {});
        VersionFollower follower = follower("receiver-0")) {
      trainer.publishAll(0);
      assertEquals(0, follower.next(WAIT).step());
      trainer.publishAll(1);
      // Rank 1 dies without a word: its slot stays READY but its memory is gone from the transport.
      trainer.ranks.get(1).publisher(1).close();
      NoReadableVersionException e =
          assertThrows(
              NoReadableVersionException.class, () -> follower.next(Duration.ofMillis(500)));
      assertTrue(
          e.getMessage().contains("step-1 (step 1, attempt 1)")
              && e.getMessage().contains("attempt 2"),
          "both attempts are named: " + e.getMessage());
      assertArrayEquals(
          expected(0), installed(), "the receiver stays on its last complete version");
      assertEquals(0, follower.lastStep());
      assertEquals(
          List.of(),
          store.versions().leases(model, "step-1"),
          "leases are dropped after a failed read");
    }
  }

  @Test
  void aFollowerStartedLateBeginsWithTheNewestReadyVersionThenFollowsInOrder() {
    store = new MemoryMetadataStore(model);
    try (TwoRankTrainer trainer = new TwoRankTrainer(store, model, WAIT, b -> {})) {
      trainer.publishAll(0);
      trainer.publishAll(1);
      assertEquals(
          List.of(true, true),
          store.versions().versions(model).stream().map(WeightVersion::isReadable).toList(),
          "both buffer sets hold a readable version when the receiver starts");
      try (VersionFollower late = follower("late-receiver")) {
        VersionFollower.Followed first = late.next(WAIT);
        assertEquals(1, first.step(), "a late receiver begins with the newest READY version");
        assertArrayEquals(expected(1), installed());
        trainer.publishAll(2);
        trainer.publishAll(3);
        assertEquals(2, late.next(WAIT).step(), "after the first install, every step in order");
        assertEquals(3, late.next(WAIT).step());
        assertArrayEquals(expected(3), installed());
      }
    }
  }

  @Test
  void aSlotWhoseTableDeclaresAnotherRankIsRefusedAsPlainDiscoveryRefusesIt() {
    store = new MemoryMetadataStore(model);
    String layout = "rows tp=2";
    // Both ranks declare rank 0: rank 1 publishes its own rows into slot '1' but is mislabelled.
    try (TwoRankTrainer trainer =
            new TwoRankTrainer(
                store,
                model,
                WAIT,
                b ->
                    b.configure(
                        p ->
                            p.rank(0)
                                .topology(2, layout)
                                .heartbeatInterval(Duration.ofSeconds(30))));
        VersionFollower follower = follower("receiver-0", new Discovery.Expectation(2, layout))) {
      trainer.publishAll(0);
      assertTrue(store.versions().version(model, "step-0").orElseThrow().isReadable());
      InconsistentSourcesException e =
          assertThrows(InconsistentSourcesException.class, () -> follower.next(WAIT));
      assertTrue(
          e.getMessage().contains("slot '1' of version 'step-0'")
              && e.getMessage().contains("the slot is trainer rank 1")
              && e.getMessage().contains("its table declares rank 0"),
          e.getMessage());
      assertEquals(null, follower.lastStep(), "nothing was installed");
      assertArrayEquals(new float[16], installed(), "the live weights are untouched");
      // The same tables, found by plain discovery of one buffer set's publishers, are refused too.
      InconsistentSourcesException plain =
          assertThrows(
              InconsistentSourcesException.class,
              () ->
                  Discovery.on(store)
                      .withPollInterval(Duration.ofMillis(20))
                      .awaitConsistent(
                          model + "#buffer-set-0",
                          new Discovery.Expectation(2, layout),
                          Duration.ofMillis(200)));
      assertTrue(
          plain.getMessage().contains("rank 0 is claimed by more than one publisher"),
          plain.getMessage());
    }
  }
}
