package dev.mx.metadata.redis;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.AbstractMetadataStore;
import dev.mx.metadata.MetadataStoreException;
import dev.mx.metadata.StoreNames;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A store in Redis, for publishers and receivers on many hosts. Keys live under {@code mx:},
 * grouped per identity by a hash tag so that one identity's keys share a cluster slot:
 *
 * <ul>
 *   <li>{@code mx:{<identity>}:source:<worker>} — a hash: {@code identity, worker_id, rank, status,
 *       updated_at, blob}, and {@code progress, phase} once the worker reported progress (a hash
 *       without them, written before they existed, reads as a record without progress);
 *   <li>{@code mx:{<identity>}:sources} — a sorted set of workers scored by their last heartbeat.
 * </ul>
 *
 * Identity and worker are {@link StoreNames#encode encoded}. Every update is one Lua script, so it
 * is atomic; heartbeats are stamped with the server's clock ({@code TIME}), and freshness is judged
 * against the same clock, so hosts need no synchronised clocks. Every write renews a TTL of {@code
 * MX_GC_TIMEOUT_S} on the keys it touches, so records of publishers that died without closing
 * vanish on their own.
 *
 * <p>The URI is {@code redis://[:password@]host:port[/db][?timeout=10s]}; the timeout bounds each
 * command (default 10 s); the server must accept the connection and answer a PING within 2 s (or
 * the timeout, if shorter), so an unreachable or silent server fails the open in seconds naming
 * host and port. While the connection is down commands fail at once and the client reconnects in
 * the background. Messages show the URI without its password.
 */
@Stable
public final class RedisMetadataStore extends AbstractMetadataStore {
  private static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofSeconds(10);

  /**
   * How long the TCP connect and the first answer of the server may take, at most the command
   * timeout.
   */
  private static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(2);

  private static final String PUBLISH =
      """
      redis.call('DEL', KEYS[1])
      redis.call('HSET', KEYS[1], 'identity', ARGV[1], 'worker_id', ARGV[2], 'rank', ARGV[3],
          'status', ARGV[4], 'updated_at', '0', 'blob', ARGV[5])
      if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], 'progress', ARGV[8], 'phase', ARGV[9]) end
      redis.call('EXPIRE', KEYS[1], ARGV[6])
      redis.call('ZADD', KEYS[2], 0, ARGV[7])
      redis.call('EXPIRE', KEYS[2], ARGV[6])
      return 1
      """;

  private static final String HEARTBEAT =
      """
      if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated_at', string.format('%d', now))
      if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'progress', ARGV[4], 'phase', ARGV[5]) end
      redis.call('EXPIRE', KEYS[1], ARGV[2])
      redis.call('ZADD', KEYS[2], now, ARGV[3])
      redis.call('EXPIRE', KEYS[2], ARGV[2])
      return now
      """;

  /**
   * Returns worker_id, rank, updated_at, progress, phase[, blob] per live READY worker, newest
   * first (progress and phase nil when the worker reported none); prunes expired ones.
   */
  private static final String LIST_READY =
      """
      local t = redis.call('TIME')
      local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      local oldest = now - tonumber(ARGV[1])
      if oldest < 1 then oldest = 1 end
      local out = {}
      for _, member in ipairs(redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', oldest)) do
        local key = ARGV[2] .. member
        local f = redis.call('HMGET', key, 'worker_id', 'rank', 'status', 'updated_at', 'progress',
            'phase')
        if not f[1] then
          redis.call('ZREM', KEYS[1], member)
        elseif f[3] == 'READY' and tonumber(f[4]) >= oldest then
          out[#out + 1] = f[1]
          out[#out + 1] = f[2]
          out[#out + 1] = f[4]
          out[#out + 1] = f[5]
          out[#out + 1] = f[6]
          if ARGV[3] == '1' then out[#out + 1] = redis.call('HGET', key, 'blob') end
        end
      end
      return out
      """;

  private static final String REMOVE =
      """
      redis.call('DEL', KEYS[1])
      redis.call('ZREM', KEYS[2], ARGV[1])
      return 1
      """;

  private final ClientResources resources;
  private final RedisClient client;
  private final StatefulRedisConnection<byte[], byte[]> connection;
  private final RedisCommands<byte[], byte[]> redis;
  private final long ttlSeconds;
  private final RedisWeightVersions versions;

  /**
   * Connects to Redis.
   *
   * @param uri {@code redis://[:password@]host:port[/db][?timeout=..]}
   * @param gcTimeout how long records live without a heartbeat
   * @throws MetadataStoreException naming the URI (without password) when Redis cannot be reached
   */
  public RedisMetadataStore(String uri, Duration gcTimeout) {
    this(parse(uri), hasCredentials(uri), gcTimeout);
  }

  private RedisMetadataStore(RedisURI redisUri, boolean credentials, Duration gcTimeout) {
    super(redacted(redisUri, credentials));
    this.ttlSeconds = Math.max(1, (gcTimeout.toMillis() + 999) / 1000);
    Duration timeout = redisUri.getTimeout();
    // An unreachable or silent server is reported in seconds, naming host and port: the TCP connect
    // and a bare PING get the short bound. Once the server has answered, the client's own
    // handshake gets the command timeout, so a loaded host that is slow to start the client is
    // not taken for a dead server.
    Duration connectTimeout = timeout.compareTo(CONNECT_TIMEOUT) < 0 ? timeout : CONNECT_TIMEOUT;
    if (!redisUri.isSsl() && redisUri.getHost() != null) {
      RedisLiveness.requireAnswer(uri(), redisUri.getHost(), redisUri.getPort(), connectTimeout);
    }
    this.resources =
        DefaultClientResources.builder().ioThreadPoolSize(2).computationThreadPoolSize(2).build();
    RedisClient c = null;
    StatefulRedisConnection<byte[], byte[]> conn = null;
    try {
      c = RedisClient.create(resources, redisUri);
      c.setOptions(
          ClientOptions.builder()
              .autoReconnect(true)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              // Commands expire after the connection's timeout, set to the command timeout below.
              .timeoutOptions(TimeoutOptions.enabled())
              .socketOptions(SocketOptions.builder().connectTimeout(connectTimeout).build())
              .build());
      conn = c.connect(ByteArrayCodec.INSTANCE);
      conn.setTimeout(timeout);
    } catch (RuntimeException e) {
      shutdown(c);
      resources.shutdown(0, 2, TimeUnit.SECONDS); // its threads would outlive the failed open
      throw new MetadataStoreException(uri(), "cannot connect to Redis: " + causes(e), e);
    }
    this.client = c;
    this.connection = conn;
    this.redis = conn.sync();
    this.versions = new RedisWeightVersions(uri(), redis, ttlSeconds, this::ensureOpen);
  }

  @Override
  public WeightVersionStore versions() {
    return versions;
  }

  private static RedisURI parse(String uri) {
    checkPort(uri);
    RedisURI parsed;
    try {
      parsed = RedisURI.create(uri);
    } catch (IllegalArgumentException e) {
      // Never echo the raw URI: it may hold a password.
      throw new IllegalArgumentException(
          "malformed Redis URI (expected redis://[:password@]host:port[/db]): " + e.getMessage(),
          e);
    }
    if (!uri.contains("timeout=")) {
      parsed.setTimeout(DEFAULT_COMMAND_TIMEOUT);
    }
    return parsed;
  }

  private static boolean hasCredentials(String uri) {
    int authority = uri.indexOf("//");
    int at = uri.indexOf('@');
    int pathStart = authority < 0 ? -1 : uri.indexOf('/', authority + 2);
    return authority >= 0 && at > authority && (pathStart < 0 || at < pathStart);
  }

  /** The URI with any credentials removed. */
  static String redacted(RedisURI u, boolean credentials) {
    return (u.isSsl() ? "rediss://" : "redis://")
        + (credentials ? "***@" : "")
        + u.getHost()
        + ":"
        + u.getPort()
        + (u.getDatabase() != 0 ? "/" + u.getDatabase() : "");
  }

  @Override
  public void publish(SourceRecord record) {
    ensureOpen();
    requireName("identity", record.identity());
    requireName("worker id", record.workerId());
    String worker = StoreNames.encode(record.workerId());
    run(
        "publish worker '" + record.workerId() + "'",
        () ->
            redis.eval(
                PUBLISH,
                ScriptOutputType.INTEGER,
                keys(recordKey(record.identity(), worker), indexKey(record.identity())),
                utf8(record.identity()),
                utf8(record.workerId()),
                utf8(Integer.toString(record.rank())),
                utf8(record.status().name()),
                record.blob(),
                utf8(Long.toString(ttlSeconds)),
                utf8(worker),
                utf8(record.reportsProgress() ? Long.toString(record.progress()) : ""),
                utf8(record.phase())));
  }

  @Override
  public void heartbeat(String identity, String workerId, SourceStatus status) {
    beat(identity, workerId, status, null, "");
  }

  @Override
  public void heartbeat(
      String identity, String workerId, SourceStatus status, long progress, String phase) {
    beat(
        identity,
        workerId,
        status,
        progress == SourceRecord.NO_PROGRESS ? null : progress,
        phase == null ? "" : phase);
  }

  /** Stamps a record; a null progress leaves the record's progress and phase as they are. */
  private void beat(
      String identity, String workerId, SourceStatus status, Long progress, String phase) {
    ensureOpen();
    requireName("identity", identity);
    requireName("worker id", workerId);
    String worker = StoreNames.encode(workerId);
    Long stamped =
        run(
            "heartbeat worker '" + workerId + "'",
            () ->
                redis.eval(
                    HEARTBEAT,
                    ScriptOutputType.INTEGER,
                    keys(recordKey(identity, worker), indexKey(identity)),
                    utf8(status.name()),
                    utf8(Long.toString(ttlSeconds)),
                    utf8(worker),
                    utf8(progress == null ? "" : Long.toString(progress)),
                    utf8(phase)));
    if (stamped == null || stamped < 0) {
      throw unknownSource(identity, workerId);
    }
  }

  @Override
  public List<SourceRecord> listReady(String identity, Duration freshness, boolean withBlobs) {
    ensureOpen();
    requireName("identity", identity);
    requireFreshness(freshness);
    List<Object> flat =
        run(
            "list READY workers of '" + identity + "'",
            () ->
                redis.eval(
                    LIST_READY,
                    ScriptOutputType.MULTI,
                    keys(indexKey(identity)),
                    utf8(Long.toString(freshness.toMillis())),
                    utf8(recordKeyPrefix(identity)),
                    utf8(withBlobs ? "1" : "0")));
    int stride = withBlobs ? 6 : 5;
    List<SourceRecord> records = new ArrayList<>(flat.size() / stride);
    for (int i = 0; i + stride <= flat.size(); i += stride) {
      byte[] blob = withBlobs ? (byte[]) flat.get(i + 5) : new byte[0];
      if (blob == null) {
        continue; // removed between the two reads inside the script: impossible, but never NPE
      }
      records.add(
          new SourceRecord(
              identity,
              str(flat.get(i)),
              Integer.parseInt(str(flat.get(i + 1))),
              blob,
              SourceStatus.READY,
              Long.parseLong(str(flat.get(i + 2))),
              progress(flat.get(i + 3)),
              flat.get(i + 4) == null ? "" : str(flat.get(i + 4))));
    }
    records.sort(NEWEST_FIRST);
    return List.copyOf(records);
  }

  @Override
  public Optional<SourceRecord> get(String identity, String workerId) {
    ensureOpen();
    requireName("identity", identity);
    requireName("worker id", workerId);
    Map<byte[], byte[]> raw =
        run(
            "read worker '" + workerId + "'",
            () -> redis.hgetall(utf8(recordKey(identity, StoreNames.encode(workerId)))));
    if (raw == null || raw.isEmpty()) {
      return Optional.empty();
    }
    Map<String, byte[]> fields = new HashMap<>();
    raw.forEach((k, v) -> fields.put(new String(k, StandardCharsets.UTF_8), v));
    try {
      return Optional.of(
          new SourceRecord(
              str(fields.get("identity")),
              str(fields.get("worker_id")),
              Integer.parseInt(str(fields.get("rank"))),
              fields.get("blob"),
              SourceStatus.valueOf(str(fields.get("status"))),
              Long.parseLong(str(fields.get("updated_at"))),
              progress(fields.get("progress")),
              fields.get("phase") == null ? "" : str(fields.get("phase"))));
    } catch (RuntimeException e) {
      throw new MetadataStoreException(
          uri(),
          "record of worker '"
              + workerId
              + "' under identity '"
              + identity
              + "' is damaged (fields "
              + fields.keySet()
              + ")",
          e);
    }
  }

  /** A hash's progress field; absent (a record written without progress) reads as none. */
  private static long progress(Object field) {
    return field == null ? SourceRecord.NO_PROGRESS : Long.parseLong(str(field));
  }

  @Override
  public void remove(String identity, String workerId) {
    ensureOpen();
    requireName("identity", identity);
    requireName("worker id", workerId);
    String worker = StoreNames.encode(workerId);
    run(
        "remove worker '" + workerId + "'",
        () ->
            redis.eval(
                REMOVE,
                ScriptOutputType.INTEGER,
                keys(recordKey(identity, worker), indexKey(identity)),
                utf8(worker)));
  }

  @Override
  protected void doClose() {
    Closeables.closeAll(
        connection, () -> shutdown(client), () -> resources.shutdown(0, 2, TimeUnit.SECONDS));
  }

  /**
   * The message of {@code e} and of each distinct cause below it (lettuce hides NOAUTH one level
   * down).
   */
  private static String causes(Throwable e) {
    StringBuilder sb = new StringBuilder(String.valueOf(e.getMessage()));
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      if (c.getMessage() != null && !sb.toString().contains(c.getMessage())) {
        sb.append(": ").append(c.getMessage());
      }
    }
    return sb.toString();
  }

  private static void shutdown(RedisClient c) {
    if (c != null) {
      c.shutdown(Duration.ZERO, Duration.ofSeconds(2));
    }
  }

  private <T> T run(String what, java.util.function.Supplier<T> command) {
    try {
      return command.get();
    } catch (RedisException e) {
      throw new MetadataStoreException(uri(), "cannot " + what + ": " + e.getMessage(), e);
    }
  }

  private static String indexKey(String identity) {
    return "mx:{" + StoreNames.encode(identity) + "}:sources";
  }

  private static String recordKeyPrefix(String identity) {
    return "mx:{" + StoreNames.encode(identity) + "}:source:";
  }

  private static String recordKey(String identity, String encodedWorker) {
    return recordKeyPrefix(identity) + encodedWorker;
  }

  private static byte[][] keys(String... keys) {
    byte[][] out = new byte[keys.length][];
    for (int i = 0; i < keys.length; i++) {
      out[i] = utf8(keys[i]);
    }
    return out;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static String str(Object bytes) {
    if (bytes == null) {
      throw new IllegalStateException("missing field");
    }
    return new String((byte[]) bytes, StandardCharsets.UTF_8);
  }

  /**
   * Rejects a port that is not a number in 1..65535 before lettuce sees the URI: lettuce would
   * otherwise treat {@code host:abc} as a host name and look it up (slowly, and with a misleading
   * error).
   */
  static void checkPort(String uri) {
    int start = uri.indexOf("//");
    if (start < 0) {
      return;
    }
    int end = start + 2;
    while (end < uri.length() && "/?#".indexOf(uri.charAt(end)) < 0) {
      end++;
    }
    String authority = uri.substring(start + 2, end);
    String hostPort = authority.substring(authority.lastIndexOf('@') + 1);
    int colon = hostPort.lastIndexOf(':');
    if (colon < 0 || hostPort.endsWith("]")) {
      return; // no port: lettuce's default 6379
    }
    String port = hostPort.substring(colon + 1);
    String host = hostPort.substring(0, colon);
    boolean valid =
        !port.isEmpty()
            && port.length() <= 5
            && port.chars().allMatch(Character::isDigit)
            && Integer.parseInt(port) >= 1
            && Integer.parseInt(port) <= 65535;
    if (!valid) {
      throw new IllegalArgumentException(
          "malformed Redis URI 'redis://"
              + host
              + ":"
              + port
              + "': the port must be a number from 1 to 65535 (expected redis://[:password@]host:port[/db])");
    }
  }
}
