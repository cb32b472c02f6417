package dev.mx.rl.store;

import dev.mx.rl.RefitBackend;
import dev.mx.rl.RefitClock;
import dev.mx.rl.redis.RedisRefitBackend;
import dev.mx.testing.RedisExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The mx:// store over a RefitService whose records are in a real redis-server. */
class RedisRefitStoreTest extends AbstractRefitStoreTest {
  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  @Override
  RefitBackend newBackend(RefitClock clock) {
    return new RedisRefitBackend(REDIS.uri(), clock);
  }
}
