package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The bounded, retrying peer handshake of ModelExpress (ARCHITECTURE §7.4), independent of the
 * transport: a {@link Dialer} does the actual exchange (fetch a peer's metadata, open an endpoint).
 *
 * <p>Peers wait in a FIFO queue. Each attempt gets {@code min(attempt bound, time left)}, with no
 * floor. A failing peer goes to the back of the queue; when a whole round of the queue failed in a
 * row the handshake sleeps {@code min(backoff, time left)}. A peer that answered is never dialed
 * again. A malformed endpoint fails only its own peer. When the total budget is spent, {@link
 * HandshakeIncompleteException} lists every outstanding peer with its attempts and last error. No
 * peers: nothing happens.
 */
@Stable
public final class Handshake {
  private static final Logger LOG = LoggerFactory.getLogger(Handshake.class);

  public static final String TIMEOUT_PROPERTY = MetadataSetting.HANDSHAKE_TIMEOUT.property();
  public static final String TIMEOUT_ENV = MetadataSetting.HANDSHAKE_TIMEOUT.env();
  public static final String ATTEMPT_PROPERTY = MetadataSetting.HANDSHAKE_ATTEMPT.property();
  public static final String ATTEMPT_ENV = MetadataSetting.HANDSHAKE_ATTEMPT.env();
  public static final String BACKOFF_PROPERTY = MetadataSetting.HANDSHAKE_BACKOFF.property();
  public static final String BACKOFF_ENV = MetadataSetting.HANDSHAKE_BACKOFF.env();

  /**
   * Exchanges metadata with one peer, within {@code timeout}; throws when the peer did not answer.
   */
  @FunctionalInterface
  public interface Dialer {
    void dial(String agent, String host, int port, Duration timeout) throws Exception;
  }

  /**
   * The time bounds.
   *
   * @param total the whole handshake
   * @param attempt one dial at most
   * @param backoff the pause after a round in which every outstanding peer failed
   */
  public record Bounds(Duration total, Duration attempt, Duration backoff) {
    /** 900 s total, 20 s per attempt, 2 s backoff (ModelExpress' defaults). */
    public static final Bounds DEFAULT =
        new Bounds(
            Liveness.seconds(MetadataSetting.HANDSHAKE_TIMEOUT.defaultSeconds()),
            Liveness.seconds(MetadataSetting.HANDSHAKE_ATTEMPT.defaultSeconds()),
            Liveness.seconds(MetadataSetting.HANDSHAKE_BACKOFF.defaultSeconds()));

    public Bounds {
      for (Duration d : new Duration[] {total, attempt, backoff}) {
        if (d == null || d.isNegative() || d.isZero()) {
          throw new IllegalArgumentException(
              "handshake bounds must be positive: total "
                  + total
                  + ", attempt "
                  + attempt
                  + ", backoff "
                  + backoff);
        }
      }
    }

    /**
     * The bounds from {@code MX_RESHARD_HANDSHAKE_TIMEOUT_S / _ATTEMPT_S / _BACKOFF_S} (or {@code
     * -Dmx.handshake.timeout / attempt / backoff}); each must be a positive finite number of
     * seconds, anything else (0, negative, inf, NaN, garbage) fails naming the setting.
     */
    public static Bounds fromSettings(Settings s) {
      return new Bounds(
          Liveness.seconds(
              s.positiveFinite(TIMEOUT_PROPERTY, TIMEOUT_ENV, DEFAULT.total.toMillis() / 1000.0)),
          Liveness.seconds(
              s.positiveFinite(ATTEMPT_PROPERTY, ATTEMPT_ENV, DEFAULT.attempt.toMillis() / 1000.0)),
          Liveness.seconds(
              s.positiveFinite(
                  BACKOFF_PROPERTY, BACKOFF_ENV, DEFAULT.backoff.toMillis() / 1000.0)));
    }
  }

  /**
   * A completed handshake.
   *
   * @param attempts dials per peer, in the order peers were given
   * @param elapsed wall time spent
   */
  public record Report(Map<String, Integer> attempts, Duration elapsed) {
    public Report {
      attempts = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(attempts));
    }

    public int peers() {
      return attempts.size();
    }
  }

  private final Bounds bounds;
  private final Ticker ticker;

  public Handshake(Bounds bounds) {
    this(bounds, Ticker.system());
  }

  public Handshake(Bounds bounds, Ticker ticker) {
    this.bounds = Objects.requireNonNull(bounds, "bounds");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
  }

  /** A handshake bounded by {@link Bounds#fromSettings} of the live settings. */
  public static Handshake fromSettings() {
    return new Handshake(Bounds.fromSettings(Settings.system()));
  }

  public Bounds bounds() {
    return bounds;
  }

  /**
   * The endpoints of exactly the peers {@code plan} reads from, in the plan's session order.
   *
   * @param tables the discovered shard tables: each table's agent name is a session, its {@code
   *     metadata_endpoint} that peer's endpoint
   * @throws MxException naming (up to 10) planned peers without an endpoint
   */
  public static Map<String, String> endpointsForPlan(TransferPlan plan, List<ShardTable> tables) {
    Map<String, String> agentEndpoints = new HashMap<>();
    for (ShardTable t : tables) {
      agentEndpoints.putIfAbsent(t.agentName(), t.metadataEndpoint());
    }
    return endpointsFor(plan.sessions(), Map.of(), agentEndpoints);
  }

  /**
   * The endpoints of exactly the peers behind {@code plannedSessions}.
   *
   * @param sessionToAgent agent of each session; a session missing here is its own agent
   * @param agentEndpoints {@code host:port} of each agent
   * @throws MxException naming (up to 10) planned agents without an endpoint
   */
  public static Map<String, String> endpointsFor(
      Collection<String> plannedSessions,
      Map<String, String> sessionToAgent,
      Map<String, String> agentEndpoints) {
    Map<String, String> endpoints = new LinkedHashMap<>();
    List<String> missing = new ArrayList<>();
    for (String session : plannedSessions) {
      String agent = sessionToAgent.getOrDefault(session, session);
      if (endpoints.containsKey(agent) || missing.contains(agent)) {
        continue;
      }
      String endpoint = agentEndpoints.get(agent);
      if (endpoint == null || endpoint.isBlank()) {
        missing.add(agent);
      } else {
        endpoints.put(agent, endpoint);
      }
    }
    if (!missing.isEmpty()) {
      throw new MxException(
          missing.size()
              + " planned peer(s) published no metadata endpoint: "
              + String.join(", ", missing.subList(0, Math.min(10, missing.size())))
              + (missing.size() > 10 ? ", ..." : ""));
    }
    return endpoints;
  }

  /**
   * Dials every peer until each answered once or the budget is spent.
   *
   * @param endpoints agent → {@code host:port} (IPv6 hosts may be bare or in brackets; the port
   *     follows the last colon)
   * @throws HandshakeIncompleteException when time ran out first
   */
  public Report run(Map<String, String> endpoints, Dialer dialer) {
    long start = ticker.nanoTime();
    if (endpoints.isEmpty()) {
      return new Report(Map.of(), Duration.ZERO);
    }
    long deadline = start + bounds.total.toNanos();
    Deque<String> queue = new ArrayDeque<>(endpoints.keySet());
    Map<String, Integer> attempts = new LinkedHashMap<>();
    endpoints.keySet().forEach(a -> attempts.put(a, 0));
    Map<String, Throwable> lastError = new HashMap<>();
    int stalled = 0;
    int answered = 0;
    while (!queue.isEmpty()) {
      long remaining = deadline - ticker.nanoTime();
      if (remaining <= 0) {
        throw incomplete(endpoints, queue, attempts, lastError, answered);
      }
      String agent = queue.pollFirst();
      String endpoint = endpoints.get(agent);
      Duration thisTimeout = Duration.ofNanos(Math.min(bounds.attempt.toNanos(), remaining));
      attempts.merge(agent, 1, Integer::sum);
      try {
        HostPort hp = HostPort.parse(endpoint);
        dialer.dial(agent, hp.host, hp.port, thisTimeout);
        answered++;
        stalled = 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new MxException(
            "P2P handshake with " + agent + "@" + endpoint + " was interrupted", e);
      } catch (Exception e) {
        lastError.put(agent, e);
        queue.addLast(agent);
        stalled++;
        LOG.debug(
            "handshake with {}@{} failed (attempt {}): {}",
            agent,
            endpoint,
            attempts.get(agent),
            e.toString());
        if (stalled >= queue.size()) {
          // A full round without progress: give the peers a moment before dialing them again.
          long pause =
              Math.min(bounds.backoff.toNanos(), Math.max(0, deadline - ticker.nanoTime()));
          sleep(Duration.ofNanos(pause));
          stalled = 0;
        }
      }
    }
    return new Report(attempts, Duration.ofNanos(ticker.nanoTime() - start));
  }

  private HandshakeIncompleteException incomplete(
      Map<String, String> endpoints,
      Deque<String> queue,
      Map<String, Integer> attempts,
      Map<String, Throwable> lastError,
      int answered) {
    List<HandshakeIncompleteException.Outstanding> outstanding = new ArrayList<>(queue.size());
    for (String agent : queue) {
      outstanding.add(
          new HandshakeIncompleteException.Outstanding(
              agent, endpoints.get(agent), attempts.get(agent), lastError.get(agent)));
    }
    return new HandshakeIncompleteException(
        bounds.total.toMillis() / 1000.0, endpoints.size(), answered, outstanding);
  }

  private void sleep(Duration d) {
    try {
      ticker.sleep(d);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new MxException("P2P handshake was interrupted", e);
    }
  }

  /** A {@code host:port} endpoint, split at the last colon. */
  record HostPort(String host, int port) {
    static HostPort parse(String endpoint) {
      int colon = endpoint == null ? -1 : endpoint.lastIndexOf(':');
      if (colon <= 0 || colon == endpoint.length() - 1) {
        throw new IllegalArgumentException(
            "malformed endpoint '" + endpoint + "': expected host:port");
      }
      String host = endpoint.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) {
        host = host.substring(1, host.length() - 1);
      }
      int port;
      try {
        port = Integer.parseInt(endpoint.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(
            "malformed endpoint '" + endpoint + "': port is not a number", e);
      }
      if (host.isEmpty() || port < 0 || port > 65535) {
        throw new IllegalArgumentException(
            "malformed endpoint '"
                + endpoint
                + "': expected host:port with a port"
                + " in 0..65535");
      }
      return new HostPort(host, port);
    }
  }
}
