package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.redis.RedisMetadataStore;
import dev.mx.testing.Eventually;
import dev.mx.testing.RedisExtension;
import dev.mx.testing.RedisServer;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The store suite against a real redis-server, plus what only Redis has: TTLs, passwords,
 * databases.
 */
class RedisMetadataStoreTest extends AbstractMetadataStoreTest {
  private static final Duration GC = Duration.ofSeconds(600);
  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  @Override
  protected MetadataStore openStore() {
    return new RedisMetadataStore(REDIS.uri(), GC);
  }

  private static <T> T withRaw(
      String uri, java.util.function.Function<RedisCommands<String, String>, T> f) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return f.apply(c.sync());
    } finally {
      client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  @Test
  void keysLiveUnderMxWithTheGcTtlRenewedByHeartbeats() {
    store.publish(
        new SourceRecord(identity, "w", 0, TestTables.blob("a", 1), SourceStatus.READY, 0));
    store.heartbeat(identity, "w", SourceStatus.READY);
    String tag = "mx:{" + StoreNames.encode(identity) + "}";
    List<String> keys = withRaw(REDIS.uri(), r -> r.keys(tag + "*")).stream().sorted().toList();
    assertEquals(List.of(tag + ":source:w", tag + ":sources"), keys);
    for (String k : keys) {
      long ttl = withRaw(REDIS.uri(), r -> r.ttl(k));
      assertTrue(ttl > GC.toSeconds() - 30 && ttl <= GC.toSeconds(), k + " ttl " + ttl);
    }
    assertEquals("READY", withRaw(REDIS.uri(), r -> r.hget(tag + ":source:w", "status")));
  }

  @Test
  void aRecordThatExpiredIsNoLongerListedAndItsIndexEntryIsPruned() {
    try (RedisMetadataStore shortLived =
        new RedisMetadataStore(REDIS.uri(), Duration.ofSeconds(1))) {
      shortLived.publish(new SourceRecord(identity, "w", 0, new byte[] {1}, SourceStatus.READY, 0));
      shortLived.heartbeat(identity, "w", SourceStatus.READY);
      store.publish(new SourceRecord(identity, "long", 0, new byte[] {2}, SourceStatus.READY, 0));
      store.heartbeat(identity, "long", SourceStatus.READY);
      String record = "mx:{" + StoreNames.encode(identity) + "}:source:w";
      Eventually.await(
          Duration.ofSeconds(60),
          "Redis to expire " + record + " (TTL 1 s)",
          () -> withRaw(REDIS.uri(), r -> r.exists(record)) == 0);
      assertEquals(
          List.of("long"),
          store.listReady(identity, FRESH).stream().map(SourceRecord::workerId).toList());
      assertEquals(
          List.of("long"),
          withRaw(
              REDIS.uri(),
              r -> r.zrange("mx:{" + StoreNames.encode(identity) + "}:sources", 0, -1)));
    }
  }

  @Test
  void databasesAreSeparate() {
    try (MetadataStore db3 = new RedisMetadataStore(REDIS.uri() + "/3", GC)) {
      db3.publish(new SourceRecord(identity, "w", 0, new byte[] {1}, SourceStatus.READY, 0));
      db3.heartbeat(identity, "w", SourceStatus.READY);
      assertEquals(1, db3.listReady(identity, FRESH).size());
      assertEquals(List.of(), store.listReady(identity, FRESH));
      assertEquals("redis://127.0.0.1:" + REDIS.port() + "/3", db3.uri());
    }
  }

  @Test
  void passwordsWorkAndNeverAppearInMessages() throws Exception {
    try (RedisServer secured = RedisServer.start("--requirepass", "s3cret-pw")) {
      String good = "redis://:s3cret-pw@127.0.0.1:" + secured.port();
      try (MetadataStore s = MetadataStores.open(good)) {
        s.publish(new SourceRecord(identity, "w", 0, new byte[] {7}, SourceStatus.READY, 0));
        assertEquals(7, s.get(identity, "w").orElseThrow().blob()[0]);
        assertEquals("redis://***@127.0.0.1:" + secured.port(), s.uri());
      }
      MetadataStoreException wrong =
          assertThrows(
              MetadataStoreException.class,
              () -> MetadataStores.open("redis://:wrong-pw@127.0.0.1:" + secured.port()));
      assertFalse(wrong.getMessage().contains("wrong-pw"), wrong.getMessage());
      assertTrue(wrong.getMessage().contains("127.0.0.1:" + secured.port()), wrong.getMessage());
      MetadataStoreException none =
          assertThrows(
              MetadataStoreException.class, () -> new RedisMetadataStore(secured.uri(), GC));
      assertTrue(none.getMessage().contains("NOAUTH"), none.getMessage());
    }
  }

  @Test
  void anUnreachableServerFailsAtOpenNamingTheUri() throws Exception {
    int deadPort;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      deadPort = s.getLocalPort();
    }
    String uri = "redis://127.0.0.1:" + deadPort + "?timeout=2s";
    MetadataStoreException e =
        assertThrows(MetadataStoreException.class, () -> MetadataStores.open(uri));
    assertTrue(
        e.getMessage().startsWith("redis://127.0.0.1:" + deadPort + ": cannot connect"),
        e.getMessage());
  }

  /**
   * A server that takes the TCP connection but never answers (a hung Redis, a port that is not
   * Redis) fails the open within the connect timeout, not the 10 s command timeout: an unreachable
   * {@code --metadata} is reported in a second or two, naming host and port.
   */
  @Test
  void aServerThatNeverAnswersFailsTheOpenWithinTheConnectTimeout() throws Exception {
    try (java.net.ServerSocket silent =
        new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
      String uri = "redis://127.0.0.1:" + silent.getLocalPort();
      MetadataStoreException e =
          assertThrows(MetadataStoreException.class, () -> MetadataStores.open(uri));
      assertTrue(e.getMessage().startsWith(uri + ": cannot connect to Redis"), e.getMessage());
      // The message names the bound that ended the wait: the 2 s connect bound, not the command
      // timeout (10 s).
      assertTrue(e.getMessage().contains("no answer within 2000 ms"), e.getMessage());
    }
  }

  /**
   * A server that answers, but whose answers to the client's handshake come later than the 2 s
   * connect bound (a loaded host: the client starting up, the server scheduled late), still opens:
   * only a server that does not answer at all is refused within the connect bound.
   */
  @Test
  void aServerSlowToAnswerTheHandshakeStillOpens() throws Exception {
    try (SlowHandshakeProxy proxy = new SlowHandshakeProxy(REDIS.port(), 3_000)) {
      String uri = "redis://127.0.0.1:" + proxy.port();
      try (MetadataStore s = MetadataStores.open(uri)) {
        s.publish(new SourceRecord(identity, "w", 0, new byte[] {5}, SourceStatus.READY, 0));
        assertEquals(5, s.get(identity, "w").orElseThrow().blob()[0]);
      }
      assertTrue(proxy.delayedConnections() >= 1, "the client's handshake was held back");
    }
  }

  /**
   * Test double: a TCP proxy to the real Redis that holds back the first answer on every connection
   * whose first request is not a bare PING (the client's handshake) for a fixed delay, as a loaded
   * host would.
   */
  private static final class SlowHandshakeProxy implements AutoCloseable {
    private final java.net.ServerSocket listener =
        new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    private final java.util.concurrent.atomic.AtomicInteger delayed =
        new java.util.concurrent.atomic.AtomicInteger();
    private final List<java.net.Socket> sockets =
        java.util.Collections.synchronizedList(new java.util.ArrayList<>());

    SlowHandshakeProxy(int redisPort, long delayMillis) throws java.io.IOException {
      Thread.ofVirtual()
          .start(
              () -> {
                while (!listener.isClosed()) {
                  try {
                    java.net.Socket client = listener.accept();
                    java.net.Socket server =
                        new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), redisPort);
                    sockets.add(client);
                    sockets.add(server);
                    var handshake = new java.util.concurrent.atomic.AtomicBoolean();
                    Thread.ofVirtual().start(() -> pump(client, server, handshake, -1));
                    Thread.ofVirtual().start(() -> pump(server, client, handshake, delayMillis));
                  } catch (java.io.IOException closed) {
                    return;
                  }
                }
              });
    }

    int port() {
      return listener.getLocalPort();
    }

    int delayedConnections() {
      return delayed.get();
    }

    /**
     * Copies {@code from} to {@code to}. The request side ({@code delayMillis < 0}) notes whether
     * the first request is a handshake; the answer side holds back its first answer if it was.
     */
    private void pump(
        java.net.Socket from,
        java.net.Socket to,
        java.util.concurrent.atomic.AtomicBoolean handshake,
        long delayMillis) {
      byte[] buf = new byte[8192];
      try {
        int n = from.getInputStream().read(buf);
        if (delayMillis < 0 && n > 0) {
          handshake.set(
              !new String(buf, 0, n, java.nio.charset.StandardCharsets.US_ASCII)
                  .equals("*1\r\n$4\r\nPING\r\n"));
        } else if (n > 0 && handshake.get()) {
          Thread.sleep(delayMillis); // the simulated slowness itself, not a wait for an event
          delayed.incrementAndGet();
        }
        while (n >= 0) {
          to.getOutputStream().write(buf, 0, n);
          n = from.getInputStream().read(buf);
        }
      } catch (java.io.IOException | InterruptedException closed) {
        // the other side or the proxy closed
      } finally {
        try {
          to.shutdownOutput();
        } catch (java.io.IOException ignored) {
          // already closed
        }
      }
    }

    @Override
    public void close() throws java.io.IOException {
      listener.close();
      synchronized (sockets) {
        for (java.net.Socket s : sockets) {
          s.close();
        }
      }
    }
  }
}
