package dev.mx.rl.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.rl.ManifestBook;
import dev.mx.rl.RefitServer;
import dev.mx.rl.memory.MemoryRefitBackend;
import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WeightVersionState;
import dev.mx.rl.proto.WorkerRole;
import io.grpc.Status;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client side of one refit through a real control plane: two trainers serve the golden Megatron
 * manifests from their own RefitWorkerService and publish shard records; a generator leases the
 * READY version, fetches each manifest from the worker that published it with its digest checked,
 * and releases. Then the faults: a record whose digest the bytes do not match, a manifest the
 * worker does not hold, a worker that is gone.
 */
class RefitClientTest {
  private static final Path MANIFESTS =
      Path.of("..").toAbsolutePath().normalize().resolveSibling("shared/golden/mx-rl/manifests");
  private static final String MODEL = "mx-probe/tiny-llama-2l-h64";
  private static final String SLOT0 = "megatron:partition:9e98c1f1";
  private static final String SLOT1 = "megatron:partition:1ddfa269";

  private RefitServer control;
  private RefitServer worker0;
  private RefitServer worker1;
  private ManifestBook book0;
  private ManifestBook book1;
  private RefitClient client;
  private final ManifestFetcher fetcher = new ManifestFetcher(Duration.ofSeconds(30));

  @BeforeEach
  void start() {
    control =
        RefitServer.builder()
            .ownedBackend(new MemoryRefitBackend(System::currentTimeMillis))
            .build();
    book0 = new ManifestBook();
    book1 = new ManifestBook();
    worker0 = RefitServer.builder().manifests(book0).build();
    worker1 = RefitServer.builder().manifests(book1).build();
    client = new RefitClient("127.0.0.1", control.port());
  }

  @AfterEach
  void stop() {
    client.close();
    client.close();
    for (RefitServer s : new RefitServer[] {worker0, worker1, control}) {
      s.close();
      s.close();
    }
  }

  private static byte[] manifest(String name) throws Exception {
    return Files.readAllBytes(MANIFESTS.resolve(name));
  }

  private WeightVersionShard publish(
      String version,
      String slot,
      String workerId,
      ManifestBook book,
      RefitServer server,
      byte[] m) {
    String digest = book.put(version, slot, m);
    WeightVersionShard s =
        WeightVersionShard.newBuilder()
            .setVersionId(version)
            .setSourceSlotId(slot)
            .setWorkerId(workerId)
            .setTensorCount(1)
            .setTotalBytes(m.length)
            .setManifestDigest(digest)
            .setManifestEndpoint(server.address())
            .setTransport("NIXL")
            .build();
    client.publishShard(s);
    return s;
  }

  private WeightVersion fullTensorVersion(String key, OptionalLong number, String... slots) {
    return client.createVersion(
        RefitRequests.createVersion(
            MODEL,
            key,
            WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
            List.of(slots),
            number,
            Optional.empty()));
  }

  @Test
  void aGeneratorFetchesEveryManifestFromItsPublisherVerifiedUnderALease() throws Exception {
    String t0 = RefitClient.freshWorkerId();
    String t1 = RefitClient.freshWorkerId();
    String g = RefitClient.freshWorkerId();
    assertTrue(t0.matches("[0-9a-f]{8}"), t0);
    assertNotEquals(t0, t1);
    client.registerWorker(t0, WorkerRole.WORKER_ROLE_TRAINER, MODEL, 60);
    client.registerWorker(t1, WorkerRole.WORKER_ROLE_TRAINER, MODEL, 60);
    client.registerWorker(g, WorkerRole.WORKER_ROLE_GENERATOR, MODEL, 60);
    WeightVersion v = fullTensorVersion("step-7", OptionalLong.of(7), SLOT0, SLOT1);
    byte[] m0 = manifest("megatron_tp0.json");
    byte[] m1 = manifest("megatron_tp1.json");
    publish(v.getUid(), SLOT0, t0, book0, worker0, m0);
    publish(v.getUid(), SLOT1, t1, book1, worker1, m1);
    assertEquals(
        WeightVersionState.WEIGHT_VERSION_STATE_READY, client.getVersion(v.getUid()).getState());

    VersionLease lease = client.registerLease(v.getUid(), g, 60);
    List<WeightVersionShard> shards = client.listShards(v.getUid());
    assertEquals(
        List.of(SLOT1, SLOT0), shards.stream().map(WeightVersionShard::getSourceSlotId).toList());
    assertArrayEquals(m1, fetcher.fetch(shards.get(0)));
    assertArrayEquals(m0, fetcher.fetch(shards.get(1)));
    assertEquals(
        "327dfe8585a3c90e7cec513ad2674a66c8e9e36fb0dcdf5ca510238bfed4aa02",
        shards.get(1).getManifestDigest());
    assertTrue(client.deleteLease(v.getUid(), lease.getLeaseId(), g));

    client.deleteVersion(v.getUid());
    assertTrue(client.deleteShard(v.getUid(), SLOT0, t0));
    RefitCallException again =
        assertThrows(RefitCallException.class, () -> client.deleteShard(v.getUid(), SLOT0, t0));
    assertEquals(Status.Code.NOT_FOUND, again.code());
    assertEquals("weight version shard not found", again.statusMessage());
    assertTrue(again.subject().contains(t0), again.subject());
    assertTrue(
        again.getMessage().startsWith("DeleteWeightVersionShard to " + client.target()),
        again.getMessage());
  }

  @Test
  void aManifestWhoseBytesDoNotMatchTheRecordIsRefusedNamingSlotAndWorker() throws Exception {
    String t0 = RefitClient.freshWorkerId();
    client.registerWorker(t0, WorkerRole.WORKER_ROLE_TRAINER, MODEL, 60);
    WeightVersion v = fullTensorVersion("k", OptionalLong.empty(), SLOT0);
    WeightVersionShard good =
        publish(v.getUid(), SLOT0, t0, book0, worker0, manifest("fsdp_rank0.json"));
    assertArrayEquals(manifest("fsdp_rank0.json"), fetcher.fetch(good));
    WeightVersionShard lying =
        good.toBuilder()
            .setManifestDigest("ad9c1da7df94430d9a3864db3305705c4ed2360cc549ae6ff83c529bc92f9b03")
            .build();
    ManifestFetcher.ManifestException e =
        assertThrows(ManifestFetcher.ManifestException.class, () -> fetcher.fetch(lying));
    assertTrue(e.getMessage().contains("slot '" + SLOT0 + "'"), e.getMessage());
    assertTrue(e.getMessage().contains("worker '" + t0 + "'"), e.getMessage());
    assertTrue(e.getMessage().contains("digest mismatch"), e.getMessage());
    // a different manifest under a published key is refused by the trainer itself
    assertThrows(
        IllegalStateException.class,
        () -> book0.put(v.getUid(), SLOT0, manifest("fsdp_rank1.json")));
  }

  @Test
  void aMissingManifestOrAGoneWorkerIsNamed() throws Exception {
    WeightVersionShard unknown =
        WeightVersionShard.newBuilder()
            .setVersionId("v1")
            .setSourceSlotId(SLOT0)
            .setWorkerId("w1")
            .setManifestDigest("00")
            .setManifestEndpoint(worker0.address())
            .build();
    ManifestFetcher.ManifestException e =
        assertThrows(ManifestFetcher.ManifestException.class, () -> fetcher.fetch(unknown));
    assertTrue(e.getMessage().endsWith(": NOT_FOUND manifest was not found"), e.getMessage());
    int freePort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      freePort = s.getLocalPort();
    }
    WeightVersionShard gone =
        unknown.toBuilder().setManifestEndpoint("127.0.0.1:" + freePort).build();
    e = assertThrows(ManifestFetcher.ManifestException.class, () -> fetcher.fetch(gone));
    assertTrue(e.getMessage().contains("UNAVAILABLE"), e.getMessage());
    assertTrue(e.getMessage().contains("127.0.0.1:" + freePort), e.getMessage());
    WeightVersionShard bad = unknown.toBuilder().setManifestEndpoint("no-port").build();
    e = assertThrows(ManifestFetcher.ManifestException.class, () -> fetcher.fetch(bad));
    assertTrue(e.getMessage().contains("not host:port"), e.getMessage());
    assertFalse(e.getMessage().isEmpty());
  }
}
