package dev.mx.bench.suite;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

/**
 * Reads a Redis server's command and network counters ({@code INFO commandstats}, {@code INFO
 * stats}) on a connection of its own, so a phase's cost is the difference of two snapshots. The
 * snapshots' own traffic is taken out: the commands are {@code INFO} (left out of the sum), and the
 * bytes of the first snapshot's replies and the second's request are subtracted.
 */
final class RedisCounters implements AutoCloseable {
  /** RESP sizes of the two requests: {@code INFO stats} and {@code INFO commandstats}. */
  private static final long STATS_REQUEST = 25;

  private static final long COMMANDSTATS_REQUEST = 33;

  /**
   * Calls, the server's microseconds in them, network bytes in and out, and the bytes this
   * snapshot's replies added to "out".
   */
  record Snapshot(long calls, long usec, long bytesIn, long bytesOut, long ownReplyBytes) {}

  private final RedisClient client;
  private final StatefulRedisConnection<String, String> connection;
  private final RedisCommands<String, String> redis;
  private boolean closed;

  RedisCounters(String uri) {
    this.client = RedisClient.create(uri);
    this.connection = client.connect();
    this.redis = connection.sync();
  }

  Snapshot snapshot() {
    String stats = redis.info("stats");
    String commands = redis.info("commandstats");
    long calls = 0;
    long usec = 0;
    for (String line : commands.split("\r?\n")) {
      if (line.startsWith("cmdstat_") && !line.startsWith("cmdstat_info:")) {
        calls += stat(line, "calls=");
        // mx's stores run everything as scripts; the commands inside a script are timed in it.
        if (isScript(line)) {
          usec += stat(line, "usec=");
        }
      }
    }
    return new Snapshot(
        calls,
        usec,
        field(stats, "total_net_input_bytes"),
        field(stats, "total_net_output_bytes"),
        resp(stats) + resp(commands));
  }

  /** The traffic between {@code before} and {@code after}, less the snapshots' own. */
  static ServiceCost between(Snapshot before, Snapshot after) {
    long in = after.bytesIn() - before.bytesIn() - COMMANDSTATS_REQUEST - STATS_REQUEST;
    long out = after.bytesOut() - before.bytesOut() - before.ownReplyBytes();
    return new ServiceCost(
        after.calls() - before.calls(),
        after.usec() - before.usec(),
        Math.max(0, in) + Math.max(0, out));
  }

  private static boolean isScript(String line) {
    return line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:");
  }

  private static long stat(String line, String key) {
    int at = line.indexOf(key);
    if (at < 0) {
      return 0;
    }
    int end = line.indexOf(',', at);
    String v = line.substring(at + key.length(), end < 0 ? line.length() : end);
    return v.contains(".") ? (long) Double.parseDouble(v) : Long.parseLong(v);
  }

  /** A bulk string reply's size on the wire: {@code $<len>\r\n<bytes>\r\n}. */
  private static long resp(String s) {
    long n = s.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
    return 1 + Long.toString(n).length() + 2 + n + 2;
  }

  private static long field(String info, String name) {
    for (String line : info.split("\r?\n")) {
      if (line.startsWith(name + ":")) {
        return Long.parseLong(line.substring(name.length() + 1).trim());
      }
    }
    throw new IllegalStateException("Redis INFO stats has no '" + name + "'");
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    connection.close();
    client.shutdown();
  }
}
