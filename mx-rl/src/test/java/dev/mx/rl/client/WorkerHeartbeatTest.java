package dev.mx.rl.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.rl.RefitServer;
import dev.mx.rl.memory.MemoryRefitBackend;
import dev.mx.rl.proto.WeightPayloadFormat;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import dev.mx.testing.Eventually;
import io.grpc.Status;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * A heartbeat keeps a 1 s registration live across many TTLs, and once closed the registration
 * expires. Waits on the heartbeat's own beats and on the server's answers, never on sleeps.
 */
class WorkerHeartbeatTest {
  private static final Duration BOUND = Duration.ofSeconds(60);

  private static WeightVersionShard shard(String version, String worker) {
    return WeightVersionShard.newBuilder()
        .setVersionId(version)
        .setSourceSlotId("s0")
        .setWorkerId(worker)
        .setManifestDigest("d")
        .setManifestEndpoint("127.0.0.1:1")
        .setTransport("NIXL")
        .build();
  }

  @Test
  void renewsUntilClosedThenTheRegistrationExpires() {
    try (RefitServer server =
            RefitServer.builder()
                .ownedBackend(new MemoryRefitBackend(System::currentTimeMillis))
                .build();
        RefitClient client = new RefitClient("127.0.0.1", server.port())) {
      String w = RefitClient.freshWorkerId();
      WeightVersion v =
          client.createVersion(
              RefitRequests.createVersion(
                  "m",
                  "k",
                  WeightPayloadFormat.WEIGHT_PAYLOAD_FORMAT_FULL_TENSOR,
                  List.of("s0"),
                  OptionalLong.empty(),
                  Optional.empty()));
      WorkerHeartbeat beat = new WorkerHeartbeat(client, w, WorkerRole.WORKER_ROLE_TRAINER, "m", 1);
      try {
        assertEquals(1, beat.beats());
        // 3 beats at least a third of the TTL apart: the first registration alone has expired.
        long start = System.nanoTime();
        Eventually.await(BOUND, "six heartbeats", () -> beat.beats() >= 6);
        assertTrue(System.nanoTime() - start >= 1_000_000_000L, "6 beats in under 1 s");
        client.publishShard(shard(v.getUid(), w));
        assertEquals(0, beat.failures());
      } finally {
        beat.close();
        beat.close();
      }
      Eventually.await(
          BOUND,
          "worker " + w + "'s registration to expire",
          () -> {
            try {
              client.publishShard(shard(v.getUid(), w).toBuilder().setTotalBytes(7).build());
              return false;
            } catch (RefitCallException e) {
              return e.code() == Status.Code.FAILED_PRECONDITION;
            }
          });
    }
  }

  @Test
  void aRefusedFirstRegistrationIsThrown() {
    try (RefitServer server =
            RefitServer.builder()
                .ownedBackend(new MemoryRefitBackend(System::currentTimeMillis))
                .build();
        RefitClient client = new RefitClient("127.0.0.1", server.port())) {
      RefitCallException e =
          assertThrows(
              RefitCallException.class,
              () -> new WorkerHeartbeat(client, "w", WorkerRole.WORKER_ROLE_TRAINER, "m", 0));
      assertEquals("ttl_seconds must be greater than zero", e.statusMessage());
    }
  }
}
