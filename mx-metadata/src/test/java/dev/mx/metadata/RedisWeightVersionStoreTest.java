package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.metadata.redis.RedisMetadataStore;
import dev.mx.testing.RedisExtension;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The version suite against a real redis-server, plus the key layout and GC TTL only Redis has. */
class RedisWeightVersionStoreTest extends AbstractWeightVersionStoreTest {
  private static final Duration GC = Duration.ofSeconds(600);
  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  @Override
  protected MetadataStore openStore() {
    return new RedisMetadataStore(REDIS.uri(), GC);
  }

  @Test
  void aVersionsKeysLiveUnderTheModelsHashTagWithTheGcTtl() {
    versions.createVersion(model, "v", 1, List.of("0"));
    versions.publishSlot(model, slot("v", "0", "w0", 1));
    versions.acquireLease(model, "v", "r", LONG_TTL);
    String tag = "mx:{" + StoreNames.encode(model) + "}";
    RedisClient client = RedisClient.create(REDIS.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      List<String> keys = c.sync().keys(tag + "*").stream().sorted().toList();
      String v = tag + ":version:v";
      assertEquals(
          List.of(
              v,
              v + ":digests",
              v + ":expected",
              v + ":leases",
              v + ":slots",
              v + ":tables",
              v + ":workers",
              tag + ":versions"),
          keys);
      for (String k : keys) {
        long ttl = c.sync().ttl(k);
        assertTrue(ttl > GC.toSeconds() - 30 && ttl <= GC.toSeconds(), k + " ttl " + ttl);
      }
      assertEquals("READY", c.sync().hget(v, "state"));
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }
}
