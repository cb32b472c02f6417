package dev.mx.rl.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.Reclaim;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionException;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.MetadataStores;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.rl.GoldenVectors;
import dev.mx.rl.ManifestBook;
import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitServer;
import dev.mx.rl.client.RefitClient;
import dev.mx.rl.client.RefitRequests;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code mx://} store against a real {@link RefitServer} over loopback: publishers and a
 * receiver are separate store instances (as separate processes would be), each with its own worker
 * server. The backend's clock is the wall clock plus an offset tests move, so expiries never need a
 * sleep.
 */
abstract class AbstractRefitStoreTest {
  static final Duration FRESH = Duration.ofSeconds(30);

  final AtomicLong offset = new AtomicLong();
  final RefitClock clock = () -> System.currentTimeMillis() + offset.get();
  RefitBackend backend;
  RefitServer server;
  String uri;
  String model;
  final List<MetadataStore> opened = new ArrayList<>();

  abstract RefitBackend newBackend(RefitClock clock);

  @BeforeEach
  void start() {
    backend = newBackend(clock);
    server = RefitServer.builder().port(0).backend(backend).clock(clock).build();
    uri = "mx://127.0.0.1:" + server.port();
    model = "test/model-" + UUID.randomUUID().toString().substring(0, 8);
  }

  @AfterEach
  void stop() {
    opened.forEach(MetadataStore::close);
    server.close();
    backend.close();
  }

  MetadataStore open() {
    MetadataStore s = MetadataStores.open(uri);
    opened.add(s);
    return s;
  }

  static byte[] table(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** Two publishers fill slots 0 and 1 of {@code step-N}; returns the READY version. */
  WeightVersion publishTwoSlots(MetadataStore p0, MetadataStore p1, long step) {
    String id = "step-" + step;
    List<String> slots = List.of("0", "1");
    p0.versions().createVersion(model, id, step, slots);
    p1.versions().createVersion(model, id, step, slots);
    WeightVersion first =
        p0.versions().publishSlot(model, VersionSlot.of(id, "0", "w0", table(id + "/0")));
    assertEquals(WeightVersionState.STAGING, first.state());
    assertEquals(List.of("1"), first.missingSlots());
    WeightVersion ready =
        p1.versions().publishSlot(model, VersionSlot.of(id, "1", "w1", table(id + "/1")));
    assertEquals(WeightVersionState.READY, ready.state());
    return ready;
  }

  @Test
  void serviceLoaderOpensMxUrisAsRefitStores() {
    MetadataStore s = open();
    assertInstanceOf(RefitMetadataStore.class, s);
    assertEquals(uri, s.uri());
    s.close();
    s.close(); // idempotent
    assertThrows(MetadataStoreException.class, () -> s.listReady(model, FRESH));
    IllegalArgumentException bad =
        assertThrows(IllegalArgumentException.class, () -> MetadataStores.open("mx://nohost"));
    assertTrue(bad.getMessage().contains("mx://host:port"), bad.getMessage());
  }

  @Test
  void recordsAreServedByTheirPublisherAndListedOnceHeartbeated() {
    MetadataStore pub = open();
    MetadataStore recv = open();
    pub.publish(new SourceRecord(model, "trainer-0", 0, table("blob-0"), SourceStatus.READY, 0));
    assertEquals(List.of(), recv.listReady(model, FRESH), "not READY before the first beat");
    pub.heartbeat(model, "trainer-0", SourceStatus.READY, 7, "writing");
    List<SourceRecord> listed = recv.listReady(model, FRESH);
    assertEquals(1, listed.size());
    assertArrayEquals(table("blob-0"), listed.getFirst().blob());
    assertEquals(7, listed.getFirst().progress());
    assertEquals("writing", listed.getFirst().phase());
    assertEquals(0, recv.listReady(model, FRESH, false).getFirst().blob().length);
    assertArrayEquals(table("blob-0"), recv.get(model, "trainer-0").orElseThrow().blob());
    assertTrue(recv.get(model, "nobody").isEmpty());
    pub.close(); // its worker server goes with it, and its records
    assertEquals(List.of(), recv.listReady(model, FRESH));
  }

  @Test
  void aVersionGoesFromTwoPublishersToAReceiverWithTheTablesStayingWithThePublishers() {
    MetadataStore p0 = open();
    MetadataStore p1 = open();
    MetadataStore recv = open();
    WeightVersion ready = publishTwoSlots(p0, p1, 3);
    assertTrue(ready.isReadable());

    // The central service holds shard records: digests and endpoints, never the tables.
    try (RefitClient c = new RefitClient("127.0.0.1", server.port())) {
      String uid = ((RefitMetadataStore) p0).known.get(model).get("step-3").uid();
      List<WeightVersionShard> shards = c.listShards(uid);
      assertEquals(2, shards.size());
      for (WeightVersionShard s : shards) {
        assertEquals(
            VersionSlot.sha256Hex(table("step-3/" + s.getSourceSlotId())), s.getManifestDigest());
        assertTrue(s.getManifestEndpoint().startsWith("127.0.0.1:"), s.getManifestEndpoint());
        assertTrue(s.getSerializedSize() < 256, "record of " + s.getSerializedSize() + " bytes");
      }
      assertEquals(3, c.getVersion(uid).getVersionNumber());
      assertEquals("step-3", c.getVersion(uid).getIdempotencyKey());
    }

    List<WeightVersion> listed = recv.versions().versions(model);
    assertEquals(List.of("step-3"), listed.stream().map(WeightVersion::id).toList());
    assertEquals(3, recv.versions().latestReadable(model).orElseThrow().step());
    recv.versions().acquireLease(model, "step-3", "receiver-0", Duration.ofSeconds(30));
    List<VersionSlot> slots = recv.versions().slots(model, "step-3");
    assertEquals(2, slots.size());
    for (VersionSlot s : slots) {
      assertArrayEquals(table("step-3/" + s.slot()), s.verified(model).table());
      assertEquals(null, s.transport(), "an mx publisher's table names its transports itself");
    }
    // Tables served by their publishers: a reader may fetch only the slots it reads.
    assertTrue(recv.versions().fetchesTablesSelectively());
    List<VersionSlot> one = recv.versions().slots(model, "step-3", java.util.Set.of("1"));
    assertEquals(List.of("1"), one.stream().map(VersionSlot::slot).toList());
    assertArrayEquals(table("step-3/1"), one.get(0).verified(model).table());
    // Released while leased: the publisher's reclaim waits for the lease.
    assertEquals(WeightVersionState.RELEASING, p0.versions().release(model, "step-3").state());
    Reclaim refused = p0.versions().reclaim(model, "step-3", "0", "w0");
    assertFalse(refused.granted());
    assertEquals(WeightVersionState.RELEASING, refused.state());
    assertTrue(recv.versions().dropLease(model, "step-3", "receiver-0"));
    assertFalse(recv.versions().dropLease(model, "step-3", "receiver-0"));
    assertTrue(p0.versions().reclaim(model, "step-3", "0", "w0").granted());
    assertTrue(p1.versions().reclaim(model, "step-3", "1", "w1").granted());
    assertEquals(List.of(), recv.versions().versions(model), "no publisher lists it any more");
  }

  @Test
  void createIsIdempotentAndAConflictingReplayIsRefusedNamingTheVersion() {
    MetadataStore p = open();
    WeightVersion v = p.versions().createVersion(model, "step-1", 1, List.of("0"));
    assertEquals(v.id(), p.versions().createVersion(model, "step-1", 1, List.of("0")).id());
    WeightVersionException e =
        assertThrows(
            WeightVersionException.class,
            () -> p.versions().createVersion(model, "step-1", 2, List.of("0")));
    assertEquals(WeightVersionException.Reason.CONFLICT, e.reason());
    assertTrue(e.getMessage().contains("step-1"), e.getMessage());
    WeightVersionException slot =
        assertThrows(
            WeightVersionException.class,
            () -> p.versions().publishSlot(model, VersionSlot.of("step-1", "9", "w", table("x"))));
    assertEquals(WeightVersionException.Reason.UNKNOWN_SLOT, slot.reason());
    WeightVersionException unknown =
        assertThrows(
            WeightVersionException.class,
            () -> p.versions().publishSlot(model, VersionSlot.of("step-9", "0", "w", table("x"))));
    assertEquals(WeightVersionException.Reason.NOT_FOUND, unknown.reason());
    assertTrue(unknown.getMessage().contains("step-9"), unknown.getMessage());
  }

  @Test
  void aManifestWhoseDigestDoesNotMatchIsRefusedNamingSlotAndWorker() {
    MetadataStore p0 = open();
    MetadataStore recv = open();
    RefitMetadataStore rogue = (RefitMetadataStore) p0;
    p0.versions().createVersion(model, "step-1", 1, List.of("0"));
    String uid = rogue.known.get(model).get("step-1").uid();
    String worker = rogue.workerFor(model);
    // The worker serves other bytes than the digest its shard record advertises.
    rogue.book.put(uid, "0", table("tampered"));
    rogue.central.publishShard(
        WeightVersionShard.newBuilder()
            .setVersionId(uid)
            .setSourceSlotId("0")
            .setWorkerId(worker)
            .setManifestDigest(VersionSlot.sha256Hex(table("genuine")))
            .setManifestEndpoint(rogue.endpoint())
            .setTransport("mx")
            .build());
    assertTrue(recv.versions().latestReadable(model).isPresent());
    WeightVersionException e =
        assertThrows(WeightVersionException.class, () -> recv.versions().slots(model, "step-1"));
    assertEquals(WeightVersionException.Reason.DIGEST_MISMATCH, e.reason());
    assertTrue(e.getMessage().contains("slot '0'"), e.getMessage());
    assertTrue(e.getMessage().contains(worker), e.getMessage());
  }

  @Test
  void aPublisherWhoseWorkerIsGoneFailsTheReadNamingSlotAndWorker() {
    MetadataStore p0 = open();
    MetadataStore p1 = open();
    MetadataStore recv = open();
    publishTwoSlots(p0, p1, 5);
    String worker = ((RefitMetadataStore) p1).workerFor(model);
    // Its heartbeats stop with it; past its TTL its registration has expired.
    p1.close();
    offset.addAndGet(Duration.ofSeconds(RefitMetadataStore.WORKER_TTL_SECONDS + 1).toMillis());
    try (RefitClient c = new RefitClient("127.0.0.1", server.port())) {
      String uid = ((RefitMetadataStore) p0).known.get(model).get("step-5").uid();
      var expired =
          assertThrows(
              dev.mx.rl.client.RefitCallException.class, () -> c.registerLease(uid, worker, 5));
      assertEquals("worker registration is missing or expired", expired.statusMessage());
    }
    WeightVersionException e =
        assertThrows(WeightVersionException.class, () -> recv.versions().slots(model, "step-5"));
    assertEquals(WeightVersionException.Reason.NOT_FOUND, e.reason());
    assertTrue(e.getMessage().contains("slot '1'"), e.getMessage());
    assertTrue(e.getMessage().contains(worker), e.getMessage());
  }

  @Test
  void aPollForVersionsFetchesNoRecordsAndTheirBlobs() {
    MetadataStore pub = open();
    RefitMetadataStore recv = (RefitMetadataStore) open();
    // One name as identity and model, as the demo's trainers use it.
    pub.publish(new SourceRecord(model, "trainer-0", 0, table("blob-0"), SourceStatus.READY, 0));
    pub.versions().createVersion(model, "step-1", 1, List.of("0"));
    List<RefitMetadataStore.Served> light = recv.entries(model, false);
    assertEquals(1, light.size());
    assertEquals(List.of(), light.getFirst().entry().records());
    assertEquals(
        List.of("step-1"), light.getFirst().entry().versions().stream().map(v -> v.id()).toList());
    List<RefitMetadataStore.Served> full = recv.entries(model, true);
    assertArrayEquals(table("blob-0"), full.getFirst().entry().records().getFirst().blob());
    assertEquals(
        List.of("step-1"),
        recv.versions().versions(model).stream().map(WeightVersion::id).toList());
  }

  @Test
  void aSlotListedWhileItsVersionIsStagingIsFetchedThenNotOnceReady() {
    MetadataStore p0 = open();
    MetadataStore p1 = open();
    MetadataStore recv = open();
    List<String> slots = List.of("0", "1");
    p0.versions().createVersion(model, "step-4", 4, slots);
    p1.versions().createVersion(model, "step-4", 4, slots);
    p0.versions().publishSlot(model, VersionSlot.of("step-4", "0", "w0", table("step-4/0")));
    // A follower's poll sees slot 0 published and fetches its table while it waits.
    WeightVersion staging = recv.versions().version(model, "step-4").orElseThrow();
    assertEquals(WeightVersionState.STAGING, staging.state());
    ((RefitWeightVersions) recv.versions()).awaitEarlyFetches();
    // Slot 0's publisher goes away; the table fetched early is what the READY version reads.
    p0.close();
    WeightVersion ready =
        p1.versions().publishSlot(model, VersionSlot.of("step-4", "1", "w1", table("step-4/1")));
    assertEquals(WeightVersionState.READY, ready.state());
    List<VersionSlot> read = recv.versions().slots(model, "step-4");
    assertEquals(List.of("0", "1"), read.stream().map(VersionSlot::slot).toList());
    for (VersionSlot s : read) {
      assertArrayEquals(table("step-4/" + s.slot()), s.verified(model).table());
    }
    // Handed over once: a second read asks the workers again, and slot 0's is gone.
    WeightVersionException gone =
        assertThrows(WeightVersionException.class, () -> recv.versions().slots(model, "step-4"));
    assertTrue(gone.getMessage().contains("slot '0'"), gone.getMessage());
  }

  @Test
  void aVersionModelExpressTrainersPublishedIsReadByItsUidWithTheirManifestsDecoded() {
    // As ModelExpress's orchestrator and Megatron trainer clients do (SPEC.md section 13): the
    // orchestrator creates the version, each trainer serves its manifest from its own process.
    String[] files = {"megatron_tp0.json", "megatron_tp1.json"};
    String[] slots = {
      "megatron:partition:9e98c1f14a58aad1d42d546584b1270bd8a6442070e1bf08273723b0c0f71f8a",
      "megatron:partition:1ddfa26955526dccb510a8a5ca9a063e94a002b69b7a946237699999592eeebc"
    };
    ManifestBook book = new ManifestBook();
    RefitServer trainers = RefitServer.builder().manifests(book).build();
    try (RefitClient c = new RefitClient("127.0.0.1", server.port())) {
      String uid =
          c.createVersion(
                  RefitRequests.createVersion(
                      model,
                      "rl-step-12",
                      WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
                      List.of(slots),
                      OptionalLong.of(12),
                      Optional.empty()))
              .getUid();
      for (int i = 0; i < 2; i++) {
        String worker = RefitClient.freshWorkerId();
        c.registerWorker(worker, WorkerRole.WORKER_ROLE_TRAINER, model, 60);
        byte[] m = GoldenVectors.manifest(files[i]);
        c.publishShard(
            WeightVersionShard.newBuilder()
                .setVersionId(uid)
                .setSourceSlotId(slots[i])
                .setWorkerId(worker)
                .setTensorCount(i == 0 ? 21 : 16)
                .setTotalBytes(i == 0 ? 90752 : 90112)
                .setManifestDigest(book.put(uid, slots[i], m))
                .setManifestEndpoint(trainers.address())
                .setTransport("NIXL")
                .build());
      }
      MetadataStore recv = open();
      assertEquals(List.of(), recv.versions().versions(model), "no mx publisher lists it");
      WeightVersion v = recv.versions().version(model, uid).orElseThrow();
      assertEquals(WeightVersionState.READY, v.state());
      assertEquals(12, v.step());
      List<String> sorted = List.of(slots).stream().sorted().toList();
      assertEquals(sorted, v.expectedSlots());
      recv.versions().acquireLease(model, uid, "generator-of-uid-test", Duration.ofSeconds(30));
      List<VersionSlot> read = recv.versions().slots(model, uid);
      assertEquals(sorted, read.stream().map(VersionSlot::slot).toList());
      assertEquals(
          List.of("NIXL", "NIXL"),
          read.stream().map(VersionSlot::transport).toList(),
          "the records' transport: the manifests' agent metadata is NIXL's");
      int first = read.get(0).slot().equals(slots[0]) ? 0 : 1;
      ShardTable t0 = ShardTableCodec.standard().decode(read.get(first).verified(model).table());
      ShardTable t1 =
          ShardTableCodec.standard().decode(read.get(1 - first).verified(model).table());
      assertEquals("mx-probe-trainer-0", t0.agentName());
      assertEquals("127.0.0.1:15555", t0.metadataEndpoint());
      assertArrayEquals(table("STUB-NIXL-AGENT-METADATA:mx-probe-trainer-0"), t0.agentMetadata());
      assertEquals(null, t0.publisherStep(), "ModelExpress's adapters emit no publisher_step");
      assertEquals(21, t0.tensors().size());
      assertEquals(16, t1.tensors().size());
      PublishedTensor q0 = t0.tensors().get(1);
      assertEquals("model.layers.0.self_attn.q_proj.weight", q0.name());
      assertEquals("torch.bfloat16", q0.dtype());
      assertArrayEquals(new long[] {64, 64}, q0.fullShape().dims());
      assertArrayEquals(new long[] {32, 64}, q0.shards().getFirst().shape().dims());
      assertEquals("3b383bc0126c330a007db13ab52f3573", q0.shards().getFirst().digest());
      PublishedTensor q1 = t1.tensors().get(1);
      assertEquals(q0.name(), q1.name());
      assertArrayEquals(new long[] {32, 0}, q1.shards().getFirst().shardOffset());
      assertEquals("2a1c0e56d7b383a4267c88866dd9f802", q1.shards().getFirst().digest());
      assertTrue(recv.versions().dropLease(model, uid, "generator-of-uid-test"));

      WeightVersionException other =
          assertThrows(
              WeightVersionException.class, () -> recv.versions().version(model + "-other", uid));
      assertEquals(WeightVersionException.Reason.CONFLICT, other.reason());
      assertTrue(
          other.getMessage().contains(uid) && other.getMessage().contains("'" + model + "'"),
          other.getMessage());
    } finally {
      trainers.close();
    }
  }

  @Test
  void aLeaseOfAnUnknownOrStagingVersionIsRefusedNamingIt() {
    MetadataStore p = open();
    MetadataStore recv = open();
    p.versions().createVersion(model, "step-2", 2, List.of("0", "1"));
    WeightVersionException staging =
        assertThrows(
            WeightVersionException.class,
            () -> recv.versions().acquireLease(model, "step-2", "r", Duration.ofSeconds(5)));
    assertEquals(WeightVersionException.Reason.WRONG_STATE, staging.reason());
    assertTrue(staging.getMessage().contains("step-2"), staging.getMessage());
    WeightVersionException unknown =
        assertThrows(
            WeightVersionException.class,
            () -> recv.versions().acquireLease(model, "step-7", "r", Duration.ofSeconds(5)));
    assertEquals(WeightVersionException.Reason.NOT_FOUND, unknown.reason());
    WeightVersionException lost =
        assertThrows(
            WeightVersionException.class,
            () -> recv.versions().renewLease(model, "step-2", "r", Duration.ofSeconds(5)));
    assertEquals(WeightVersionException.Reason.LEASE_LOST, lost.reason());
  }
}
