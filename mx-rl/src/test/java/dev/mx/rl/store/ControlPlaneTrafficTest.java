package dev.mx.rl.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.metadata.MetadataStores;
import dev.mx.rl.RefitClock;
import dev.mx.rl.RefitServer;
import dev.mx.rl.ServiceTraffic;
import dev.mx.rl.memory.MemoryRefitBackend;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * What one refit step costs each participant at the central service (issue 36's goal: O(1) commands
 * and at most 64 KiB per participant, shard records and never tables): {@code N} publishers each
 * create and publish one 64 KiB table, {@code M} receivers each list, lease, fetch every table and
 * drop the lease. A server interceptor counts calls and request plus response bytes per client
 * connection (each store has its own). Tables go worker to worker and are not counted here.
 */
class ControlPlaneTrafficTest {
  private static final int TABLE_BYTES = 64 * 1024;

  /** Counts calls and bytes per client connection (each store has its own). */
  private final ServiceTraffic counter = new ServiceTraffic();

  /** One step's calls and bytes per participant: {max publisher calls, bytes, receiver ...}. */
  private long[] step(int publishers, int receivers) {
    List<MetadataStore> stores = new ArrayList<>();
    try (MemoryRefitBackend backend = new MemoryRefitBackend(RefitClock.system());
        RefitServer server =
            RefitServer.builder().port(0).backend(backend).intercept(counter).build()) {
      String uri = "mx://127.0.0.1:" + server.port();
      String model = "traffic-" + publishers;
      List<String> slots = IntStream.range(0, publishers).mapToObj(Integer::toString).toList();
      List<MetadataStore> pubs = new ArrayList<>();
      List<MetadataStore> recvs = new ArrayList<>();
      for (int i = 0; i < publishers + receivers; i++) {
        MetadataStore s = MetadataStores.open(uri);
        stores.add(s);
        (i < publishers ? pubs : recvs).add(s);
      }
      // Joining (worker registration, directory record) happens once per process, not per step.
      for (MetadataStore p : pubs) {
        ((RefitMetadataStore) p).workerFor(model);
      }
      for (MetadataStore r : recvs) {
        ((RefitMetadataStore) r).directoryUid(model);
      }
      // The two phases one after the other: each connection seen in a phase is one participant
      // of that side (publishers' heartbeats during the receivers' phase are a call or two).
      counter.clearPeers();
      for (int i = 0; i < publishers; i++) {
        MetadataStore p = pubs.get(i);
        p.versions().createVersion(model, "step-1", 1, slots);
        byte[] table = new byte[TABLE_BYTES];
        table[0] = (byte) i;
        p.versions().publishSlot(model, VersionSlot.of("step-1", slots.get(i), "w" + i, table));
      }
      long[] out = new long[4];
      out[0] = most(true);
      out[1] = most(false);
      counter.clearPeers();
      for (int i = 0; i < receivers; i++) {
        MetadataStore r = recvs.get(i);
        WeightVersion v = r.versions().latestReadable(model).orElseThrow();
        r.versions().acquireLease(model, v.id(), "receiver-" + i, Duration.ofSeconds(30));
        assertEquals(publishers, r.versions().slots(model, v.id()).size());
        assertTrue(r.versions().dropLease(model, v.id(), "receiver-" + i));
        // Its channels to every publisher go with it: 128 x 256 open connections would exhaust
        // this one JVM's file descriptors, where real receivers are separate processes.
        r.close();
      }
      out[2] = most(true);
      out[3] = most(false);
      return out;
    } finally {
      stores.forEach(MetadataStore::close);
    }
  }

  /** The most calls (or bytes) one connection made. */
  private long most(boolean calls) {
    return counter.byPeer().values().stream()
        .mapToLong(t -> calls ? t.calls() : t.bytes())
        .max()
        .orElse(0);
  }

  @Test
  void commandsPerParticipantStayConstantAndBytesStayUnder64KiB() {
    long[] small = step(16, 8);
    // The 256 + 128 takes minutes on a small machine (384 stores, each with a gRPC
    // server, in one JVM): -Dmx.rl.traffic.full=true runs it, the default run doubles twice.
    boolean full = Boolean.getBoolean("mx.rl.traffic.full");
    int trainers = full ? 256 : 64;
    long[] large = step(trainers, trainers / 2);
    System.out.printf(
        "control plane per step: 16+8: publisher %d calls %d B, receiver %d calls %d B;"
            + " %d+%d: publisher %d calls %d B, receiver %d calls %d B; trainer heartbeats"
            + " (every %d s) %d B each%n",
        small[0],
        small[1],
        small[2],
        small[3],
        trainers,
        trainers / 2,
        large[0],
        large[1],
        large[2],
        large[3],
        RefitMetadataStore.WORKER_TTL_SECONDS / 3,
        counter.heartbeats().calls() == 0
            ? 0
            : counter.heartbeats().bytes() / counter.heartbeats().calls());
    assertEquals(small[0], large[0], "publisher calls grow with the job");
    assertEquals(small[2], large[2], "receiver calls grow with the job");
    assertTrue(large[1] <= 64 * 1024, "publisher bytes " + large[1]);
    assertTrue(large[3] <= 64 * 1024, "receiver bytes " + large[3]);
  }
}
