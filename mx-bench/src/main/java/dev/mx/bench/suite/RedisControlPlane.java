package dev.mx.bench.suite;

import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.redis.RedisMetadataStore;
import dev.mx.testing.RedisServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The scale bench's {@code redis:} control plane: a real {@code redis-server} on a free loopback
 * port holds every version, lease and shard table; the participants share a pool of real {@link
 * RedisMetadataStore} connections (one process would hold one each). Cost: {@link RedisCounters}.
 */
final class RedisControlPlane implements ControlPlaneBackend {
  /** Connections shared by the simulated participants. */
  static final int CONNECTIONS = 16;

  private final String uri;

  /** The server this bench started, or null for one started by someone else (tests). */
  private final RedisServer redis;

  private final List<RedisMetadataStore> stores = new ArrayList<>();
  private final RedisCounters counters;
  private boolean closed;

  /**
   * @param uri the server's {@code redis://} URI
   * @param owned the server, when this control plane started it and closes it; else null
   */
  RedisControlPlane(String uri, RedisServer owned) {
    this.uri = uri;
    this.redis = owned;
    RedisCounters c = null;
    try {
      c = new RedisCounters(uri);
      for (int i = 0; i < CONNECTIONS; i++) {
        // Fetching every table of a trillion-parameter model is slow: never time a reply out.
        stores.add(new RedisMetadataStore(uri + "?timeout=600s", Duration.ofMinutes(30)));
      }
    } catch (RuntimeException e) {
      stores.forEach(RedisMetadataStore::close);
      if (c != null) {
        c.close();
      }
      stop(owned);
      throw e;
    }
    this.counters = c;
  }

  /** Starts a real redis-server on a free loopback port, or fails saying why not. */
  static RedisControlPlane start() throws Exception {
    RedisServer redis;
    try {
      redis = RedisServer.launch();
    } catch (IllegalStateException e) {
      throw new IllegalStateException(
          "mx bench scale needs a real redis-server: " + e.getMessage(), e);
    }
    return new RedisControlPlane(redis.uri(), redis);
  }

  @Override
  public String describe() {
    return "redis-server on " + uri;
  }

  @Override
  public String costName() {
    return "redis";
  }

  @Override
  public Participants participants(int trainers) {
    return new Participants() {
      @Override
      public WeightVersionStore trainer(int rank) {
        return stores.get(rank % stores.size()).versions();
      }

      @Override
      public WeightVersionStore receiver(int rank) {
        return stores.get(rank % stores.size()).versions();
      }

      @Override
      public void close() {}
    };
  }

  @Override
  public Meter meter() {
    RedisCounters.Snapshot before = counters.snapshot();
    return () -> RedisCounters.between(before, counters.snapshot());
  }

  @Override
  public double fetchServingMs(double fetchServerMs, byte[] largestTable, int receivers) {
    return fetchServerMs;
  }

  @Override
  public boolean phasesScaleOut() {
    return false;
  }

  @Override
  public String fetchServingLabel() {
    return "Redis serving all";
  }

  /**
   * BS15: a command that failed because the bench's own redis-server died (killed, crashed) says
   * so, naming its port, instead of the client's "Command timed out after 1 minute(s)".
   */
  @Override
  public RuntimeException explain(RuntimeException failure) {
    return redis == null ? failure : serverGone(redis, failure);
  }

  static RuntimeException serverGone(RedisServer redis, RuntimeException failure) {
    if (redis.isAlive()) {
      return failure;
    }
    return new IllegalStateException(
        "the bench's redis-server on port "
            + redis.port()
            + " "
            + redis.exitDescription()
            + " mid-run; the control-plane measurement stopped there",
        failure);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    stores.forEach(RedisMetadataStore::close);
    counters.close();
    stop(redis);
  }

  /** Kills {@code server} (null: none) and removes its log. */
  private static void stop(RedisServer server) {
    if (server == null) {
      return;
    }
    try {
      server.close();
    } catch (IOException e) {
      throw new UncheckedIOException("removing the bench's redis-server log", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
