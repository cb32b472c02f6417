package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.metadata.MetadataStores;
import dev.mx.metadata.ShardTableCodec;
import dev.mx.rl.ManifestBook;
import dev.mx.rl.RefitServer;
import dev.mx.rl.client.RefitClient;
import dev.mx.rl.client.RefitRequests;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An mx engine following a weight version that ModelExpress's Megatron trainer adapter published
 * (SPEC.md sections 13-14): the version created by an orchestrator under an idempotency key, one
 * record per {@code megatron:partition:} slot with transport {@code NIXL}, each trainer registered
 * as a TRAINER worker serving its manifest from its own {@code RefitWorkerService}, the manifest's
 * {@code agent_meta_b64} the trainer's NIXL agent metadata and no mx key in it (no {@code
 * publisher_step}, no tile digests). The receivers ({@code mx receive --follow --version-id UID
 * --transport nixl}, each its own JVM) must load that metadata into their own NIXL agents, read the
 * trainers' registered memory and install the generator's weights bit for bit.
 *
 * <p>The trainers' memory and agents are {@code mx publish --transport nixl} processes: what a
 * Megatron rank registers with NIXL, with the tensor digests of section 14.4. This test plays the
 * orchestrator and the adapters' control-plane half (the version, the worker registrations, the
 * manifests in ModelExpress's shape, the records). NIXL is the C test double of its ABI
 * (process_vm_readv between the processes) unless {@code MX_NIXL_LIBRARY} names a real {@code
 * libnixl_capi.so}, which the processes then load.
 */
class ModelExpressTrainerOverNixlTest {
  private static final String MODEL = "tiny-llama";
  private static final long STEP = 3;
  @TempDir Path dir;

  @Test
  void receiversInstallAVersionModelExpressMegatronTrainersPublishedOverNixl() throws Exception {
    List<Process> all = new ArrayList<>();
    ManifestBook book = new ManifestBook();
    try (RefitServer manifests = RefitServer.builder().manifests(book).build()) {
      String address = DemoRun.startServe(dir, all);
      String identity = "mx-nixl-" + UUID.randomUUID().toString().substring(0, 8);
      List<String> job = DemoRun.tp2Job(MODEL, "mx://" + address, "nixl", identity);
      for (int r = 0; r < 2; r++) {
        List<String> a =
            new ArrayList<>(
                List.of(
                    "publish",
                    "--rank",
                    Integer.toString(r),
                    "--step",
                    Long.toString(STEP),
                    "--steps",
                    "1"));
        a.addAll(job);
        all.add(
            DemoRun.mxProcess(
                dir.resolve("trainer-" + r + ".log"), nixlJvm(), a.toArray(String[]::new)));
      }
      String uid = republishAsModelExpress(address, identity, manifests, book, all);

      Path dump = dir.resolve("dump");
      List<Process> receivers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> a = new ArrayList<>(DemoRun.followingReceiver(r, 1, dump, job));
        a.addAll(List.of("--version-id", uid));
        receivers.add(
            DemoRun.mxProcess(
                dir.resolve("receiver-" + r + ".log"), nixlJvm(), a.toArray(String[]::new)));
      }
      all.addAll(receivers);
      for (int r = 0; r < 2; r++) {
        JsonNode report =
            DemoRun.successfulReport(receivers.get(r), dir.resolve("receiver-" + r + ".log"));
        assertEquals(STEP, report.get("run").get("last_step").asLong(), report.toString());
        assertEquals("nixl", report.get("run").get("transport").asText(), report.toString());
      }
      DemoRun.assertDumpMatchesGenerator(dump, MODEL, 2, 1, "f32", "f32", STEP);

      // A receiver whose transport is not NIXL cannot use the trainers' agent metadata: refused
      // from the records, naming slot, version, worker and both transports.
      List<String> shmJob = DemoRun.tp2Job(MODEL, "mx://" + address, "shm", identity);
      List<String> a = new ArrayList<>(DemoRun.followingReceiver(0, 1, dir.resolve("d2"), shmJob));
      a.addAll(List.of("--version-id", uid));
      Process wrong =
          DemoRun.mxProcess(dir.resolve("wrong.log"), nixlJvm(), a.toArray(String[]::new));
      all.add(wrong);
      String out = new String(wrong.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(wrong.waitFor(120, java.util.concurrent.TimeUnit.SECONDS));
      String err = Files.readString(dir.resolve("wrong.log"));
      assertEquals(1, wrong.exitValue(), out + "\n" + err);
      String error =
          new com.fasterxml.jackson.databind.ObjectMapper().readTree(out).get("error").asText();
      assertTrue(
          error.contains("of version '" + uid + "' was published over NIXL by worker '")
              && error.contains("this receiver reads over shm (read it with the 'nixl' transport)"),
          error + "\n" + err);
    } finally {
      DemoRun.destroyAll(all);
    }
  }

  /**
   * Takes the tables the two {@code mx publish} ranks published as mx's version {@code step-3},
   * re-encodes each as ModelExpress's Megatron adapter writes its manifest, and publishes them as a
   * new version the way ModelExpress's orchestrator and trainers do; returns its uid.
   */
  private String republishAsModelExpress(
      String address, String identity, RefitServer manifests, ManifestBook book, List<Process> all)
      throws Exception {
    List<VersionSlot> slots = readyTables(address, identity, all);
    ShardTableCodec codec = ShardTableCodec.standard();
    List<byte[]> documents = new ArrayList<>();
    List<String> slotIds = new ArrayList<>();
    List<ShardTable> tables = new ArrayList<>();
    for (VersionSlot s : slots) {
      ShardTable t = codec.decode(s.verified(identity).table());
      ShardTable adapter =
          new ShardTable(
              t.agentName(),
              "127.0.0.1:" + (5555 + tables.size()),
              t.agentMetadata(),
              t.tensors().stream().map(ModelExpressTrainerOverNixlTest::withoutMxKeys).toList(),
              null,
              null,
              List.of());
      tables.add(adapter);
      documents.add(codec.encode(adapter));
      slotIds.add(
          "megatron:partition:"
              + VersionSlot.sha256Hex(
                  (t.agentName() + "/" + t.tensors().size()).getBytes(StandardCharsets.UTF_8)));
    }
    try (RefitClient c = new RefitClient("127.0.0.1", port(address))) {
      String uid =
          c.createVersion(
                  RefitRequests.createVersion(
                      identity,
                      "rl-step-" + STEP,
                      WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
                      slotIds,
                      OptionalLong.of(STEP),
                      Optional.empty()))
              .getUid();
      for (int i = 0; i < tables.size(); i++) {
        String worker = RefitClient.freshWorkerId();
        c.registerWorker(worker, WorkerRole.WORKER_ROLE_TRAINER, identity, 300);
        long bytes = 0;
        for (PublishedTensor p : tables.get(i).tensors()) {
          for (PublishedShard sh : p.shards()) {
            bytes += sh.shape().byteSize(p.elsize());
          }
        }
        c.publishShard(
            WeightVersionShard.newBuilder()
                .setVersionId(uid)
                .setSourceSlotId(slotIds.get(i))
                .setWorkerId(worker)
                .setTensorCount(tables.get(i).tensors().size())
                .setTotalBytes(bytes)
                .setManifestDigest(book.put(uid, slotIds.get(i), documents.get(i)))
                .setManifestEndpoint(manifests.address())
                .setTransport("NIXL")
                .build());
      }
      WeightVersion v;
      try (MetadataStore store = MetadataStores.open("mx://" + address)) {
        v = store.versions().version(identity, uid).orElseThrow();
      }
      assertEquals(WeightVersionState.READY, v.state(), "every Megatron slot has its record");
      return uid;
    }
  }

  /** mx's version {@code step-3} once both ranks published it (the trainers' logs on a timeout). */
  private List<VersionSlot> readyTables(String address, String identity, List<Process> all)
      throws Exception {
    try (MetadataStore store = MetadataStores.open("mx://" + address)) {
      long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (true) {
        Optional<WeightVersion> v = store.versions().version(identity, "step-" + STEP);
        if (v.isPresent() && v.get().state() == WeightVersionState.READY) {
          List<VersionSlot> slots = store.versions().slots(identity, "step-" + STEP);
          assertEquals(2, slots.size(), "one table per trainer rank");
          return slots;
        }
        for (Process p : all) {
          assertTrue(p.isAlive(), "a trainer or mx serve exited: " + logs());
        }
        assertTrue(System.nanoTime() < deadline, "step " + STEP + " not READY: " + logs());
        Thread.sleep(50); // the next poll: RefitService has no watch
      }
    }
  }

  /** A shard as ModelExpress's adapter lists it: the tensor digest only. */
  private static PublishedTensor withoutMxKeys(PublishedTensor t) {
    List<PublishedShard> shards =
        t.shards().stream()
            .map(
                s ->
                    new PublishedShard(
                        s.agentName(),
                        s.deviceId(),
                        s.addr(),
                        s.shardOffset(),
                        s.shape(),
                        s.digest(),
                        null,
                        null))
            .toList();
    return new PublishedTensor(t.name(), t.dtype(), t.elsize(), t.fullShape(), shards);
  }

  /**
   * JVM options that make the processes load the NIXL test double, unless MX_NIXL_LIBRARY names a
   * real NIXL.
   */
  private static List<String> nixlJvm() {
    String real = System.getenv("MX_NIXL_LIBRARY");
    if (real != null && !real.isBlank()) {
      return List.of();
    }
    String d = System.getProperty("mx.nixl.test.double");
    assertTrue(
        d != null && Files.isRegularFile(Path.of(d)),
        "the NIXL test double " + d + " is built by mx-transport-nixl: build the reactor first");
    return List.of("-Dmx.nixl.library=" + d);
  }

  private String logs() throws Exception {
    StringBuilder b = new StringBuilder();
    try (var files = Files.list(dir)) {
      for (Path p : files.filter(f -> f.toString().endsWith(".log")).toList()) {
        b.append("\n--- ").append(p.getFileName()).append('\n').append(Files.readString(p));
      }
    }
    return b.toString();
  }

  private static int port(String address) {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
  }
}
