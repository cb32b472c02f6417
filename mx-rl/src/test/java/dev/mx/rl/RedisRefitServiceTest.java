package dev.mx.rl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.rl.proto.VersionLease;
import dev.mx.rl.proto.WeightVersion;
import dev.mx.rl.proto.WeightVersionShard;
import dev.mx.rl.proto.WorkerRole;
import dev.mx.rl.redis.RedisRefitBackend;
import dev.mx.testing.RedisExtension;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.StringCodec;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SPEC.md's scenarios over a real {@code redis-server}; replica B is a second server with its own
 * connection, so tests A and C run two replicas over one Redis. Also checks SPEC.md section 11's
 * key layout.
 */
class RedisRefitServiceTest extends AbstractRefitServiceTest {
  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  @Override
  RefitBackend newBackend(RefitClock clock) {
    return new RedisRefitBackend(REDIS.uri(), clock);
  }

  @Override
  RefitBackend replicaOf(RefitBackend first, RefitClock clock) {
    return new RedisRefitBackend(REDIS.uri(), clock);
  }

  @Test
  void recordsFollowTheReferenceKeyLayout() {
    String[] rv = readyVersion(id("layout"));
    String uid = rv[0];
    String trainer = rv[1];
    String gen = id("gen");
    register(a, gen, WorkerRole.WORKER_ROLE_GENERATOR, 60);
    VersionLease l = lease(a, uid, gen, 60);
    RedisClient client = RedisClient.create(REDIS.uri());
    try (StatefulRedisConnection<String, String> c = client.connect(StringCodec.UTF8);
        StatefulRedisConnection<byte[], byte[]> raw = client.connect(ByteArrayCodec.INSTANCE)) {
      RedisCommands<String, String> r = c.sync();
      String v = "mx:refit:version:" + uid;
      Map<String, String> h = r.hgetall(v);
      assertEquals(uid, h.get("uid"));
      assertEquals(model, h.get("model_name"));
      assertEquals("", h.get("version_number"));
      assertEquals(id("layout"), h.get("idempotency_key"));
      assertEquals("1", h.get("payload_format"));
      assertEquals("", h.get("base_version_id"));
      assertEquals("[\"" + SLOT0 + "\"]", h.get("expected_source_slots"));
      assertEquals("1", h.get("expected_source_slot_count"));
      assertEquals("", h.get("layout_signature"));
      assertEquals("2", h.get("state"));
      assertEquals(Long.toString(TestClock.GOLDEN_NOW), h.get("created_at_unix_ms"));
      assertEquals(-1, r.ttl(v), "version records never expire");
      assertEquals(uid, r.get("mx:refit:version-request:" + model + ":" + id("layout")));
      assertEquals(Set.of(SLOT0), r.smembers(v + ":expected-source-slots"));
      assertEquals(Set.of(SLOT0), r.smembers(v + ":coverage"));
      String pub = trainer.length() + ":" + trainer + SLOT0;
      byte[] stored = raw.sync().hget((v + ":shards").getBytes(), pub.getBytes());
      assertEquals(shard(uid, SLOT0, trainer), parse(stored));
      Map<String, String> w = r.hgetall("mx:refit:worker:" + trainer);
      assertEquals(trainer, w.get("worker_id"));
      assertEquals("1", w.get("role"));
      assertEquals(model, w.get("model_name"));
      assertEquals(Long.toString(TestClock.GOLDEN_NOW + 60_000), w.get("expires_at_unix_ms"));
      long workerTtl = r.pttl("mx:refit:worker:" + trainer);
      assertTrue(workerTtl > 0 && workerTtl <= 60_000, "worker PEXPIRE " + workerTtl);
      assertEquals(
          (double) l.getExpiresAtUnixMs(), r.zscore(v + ":leases", l.getLeaseId()), "lease index");
      Map<String, String> lease = r.hgetall(v + ":lease:" + l.getLeaseId());
      assertEquals(
          Map.of(
              "lease_id",
              l.getLeaseId(),
              "version_id",
              uid,
              "worker_id",
              gen,
              "expires_at_unix_ms",
              Long.toString(l.getExpiresAtUnixMs())),
          lease);
    } finally {
      client.shutdown();
    }
  }

  private static WeightVersionShard parse(byte[] bytes) {
    try {
      return WeightVersionShard.parseFrom(bytes);
    } catch (com.google.protobuf.InvalidProtocolBufferException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void aServerRestartedOverTheSameRedisLosesNothing() {
    String[] rv = readyVersion(id("restart"));
    serverA.close();
    backendA.close();
    backendA = newBackend(clock);
    serverA = RefitServer.builder().port(0).backend(backendA).clock(clock).build();
    channelA.shutdownNow();
    channelA = channel(serverA.port());
    a = dev.mx.rl.proto.RefitServiceGrpc.newBlockingStub(channelA);
    WeightVersion v = get(a, rv[0]);
    assertEquals(dev.mx.rl.proto.WeightVersionState.WEIGHT_VERSION_STATE_READY, v.getState());
    assertEquals(1, list(a, rv[0]).size());
  }

  @Test
  void withoutAClockExpiriesComeFromRedisTime() throws Exception {
    try (RefitBackend redisTime = RefitBackends.open(REDIS.uri(), RefitClock.system());
        RefitServer server = RefitServer.builder().ownedBackend(redisTime).build()) {
      io.grpc.ManagedChannel c = channel(server.port());
      try {
        long before = System.currentTimeMillis();
        long expiry =
            register(
                    dev.mx.rl.proto.RefitServiceGrpc.newBlockingStub(c),
                    id("w"),
                    WorkerRole.WORKER_ROLE_TRAINER,
                    30)
                .getExpiresAtUnixMs();
        long after = System.currentTimeMillis();
        // Redis runs on this host: its TIME is this clock, give or take a second.
        assertTrue(
            expiry >= before + 29_000 && expiry <= after + 31_000,
            "expiry " + expiry + " not 30 s after [" + before + ", " + after + "]");
      } finally {
        c.shutdownNow().awaitTermination(5, java.util.concurrent.TimeUnit.SECONDS);
      }
    }
  }
}
