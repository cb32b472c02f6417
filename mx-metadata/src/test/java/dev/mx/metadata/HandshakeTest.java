package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The handshake cases of ModelExpress (ARCHITECTURE §7.9) ({@code
 * test_reshard_refit_handshake.py}), on a fake clock.
 */
class HandshakeTest {
  private final FakeTicker ticker = new FakeTicker();

  /** One dial as the handshake made it. */
  record Dial(String agent, String host, int port, Duration timeout) {}

  /**
   * Test double of a transport's dialer: fails each agent a scripted number of times, costing
   * scripted time.
   */
  private final class ScriptedDialer implements Handshake.Dialer {
    final List<Dial> dials = new ArrayList<>();
    final Map<String, Integer> failuresLeft = new HashMap<>();
    Duration costOfFailure = Duration.ZERO;
    boolean failuresUseWholeTimeout;

    @Override
    public void dial(String agent, String host, int port, Duration timeout) throws IOException {
      dials.add(new Dial(agent, host, port, timeout));
      int left = failuresLeft.getOrDefault(agent, 0);
      if (left > 0) {
        failuresLeft.put(agent, left - 1);
        ticker.advance(failuresUseWholeTimeout ? timeout : costOfFailure);
        throw new ConnectException("connection refused by " + agent);
      }
    }

    List<String> order() {
      return dials.stream().map(Dial::agent).toList();
    }
  }

  private static Map<String, String> peers(String... agentEndpointPairs) {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < agentEndpointPairs.length; i += 2) {
      m.put(agentEndpointPairs[i], agentEndpointPairs[i + 1]);
    }
    return m;
  }

  private Handshake handshake(double total, double attempt, double backoff) {
    return new Handshake(
        new Handshake.Bounds(
            Liveness.seconds(total), Liveness.seconds(attempt), Liveness.seconds(backoff)),
        ticker);
  }

  @Test
  void everyPeerIsDialedOnceWhenAllAnswer() {
    ScriptedDialer d = new ScriptedDialer();
    Handshake.Report r = handshake(900, 20, 2).run(peers("a", "h1:1", "b", "h2:2", "c", "h3:3"), d);
    assertEquals(List.of("a", "b", "c"), d.order());
    assertEquals(Map.of("a", 1, "b", 1, "c", 1), r.attempts());
    assertEquals(3, r.peers());
    d.dials.forEach(x -> assertEquals(Duration.ofSeconds(20), x.timeout(), "attempt cap"));
  }

  @Test
  void hostAndPortSplitAtTheLastColonIncludingIpv6() {
    ScriptedDialer d = new ScriptedDialer();
    handshake(900, 20, 2)
        .run(
            peers(
                "v4",
                "10.0.0.5:5555",
                "v6",
                "fe80::1:7000",
                "br",
                "[::1]:7001",
                "name",
                "trainer-3.svc:6000"),
            d);
    assertEquals(
        List.of(
            new Dial("v4", "10.0.0.5", 5555, Duration.ofSeconds(20)),
            new Dial("v6", "fe80::1", 7000, Duration.ofSeconds(20)),
            new Dial("br", "::1", 7001, Duration.ofSeconds(20)),
            new Dial("name", "trainer-3.svc", 6000, Duration.ofSeconds(20))),
        d.dials);
  }

  @Test
  void eachAttemptIsClampedToTheTimeLeftWithoutAFloor() {
    ScriptedDialer d = new ScriptedDialer();
    d.failuresLeft.put("a", 1);
    d.costOfFailure = Duration.ofMillis(4700);
    handshake(5, 20, 0.1).run(peers("a", "h:1"), d);
    assertEquals(Duration.ofSeconds(5), d.dials.get(0).timeout(), "min(20 s attempt, 5 s left)");
    // 4.7 s spent, then a 0.1 s backoff: 0.2 s left for the retry.
    assertEquals(Duration.ofMillis(200), d.dials.get(1).timeout());
  }

  @Test
  void aFailingPeerIsDeferredToTheBackAndRetried() {
    ScriptedDialer d = new ScriptedDialer();
    d.failuresLeft.put("a", 2);
    Handshake.Report r = handshake(900, 20, 2).run(peers("a", "h:1", "b", "h:2", "c", "h:3"), d);
    assertEquals(
        List.of("a", "b", "c", "a", "a"),
        d.order(),
        "a goes to the back; b and c are never re-dialed");
    assertEquals(Map.of("a", 3, "b", 1, "c", 1), r.attempts());
  }

  @Test
  void backoffOnlyAfterAWholeRoundFailedAndClampedToTheDeadline() {
    ScriptedDialer d = new ScriptedDialer();
    d.failuresLeft.put("a", 2);
    d.failuresLeft.put("b", 2);
    handshake(900, 20, 2).run(peers("a", "h:1", "b", "h:2"), d);
    assertEquals(List.of("a", "b", "a", "b", "a", "b"), d.order());
    assertEquals(
        List.of(Duration.ofSeconds(2), Duration.ofSeconds(2)),
        ticker.sleeps,
        "one backoff per fully failed round, none while some peer still has its first try pending");

    FakeTicker before = ticker;
    before.sleeps.clear();
    ScriptedDialer slow = new ScriptedDialer();
    slow.failuresLeft.put("x", 100);
    slow.costOfFailure = Duration.ofMillis(2900);
    assertThrows(
        HandshakeIncompleteException.class, () -> handshake(3, 20, 2).run(peers("x", "h:9"), slow));
    assertEquals(
        List.of(Duration.ofMillis(100)),
        ticker.sleeps,
        "the backoff never sleeps past the deadline");
  }

  @Test
  void theBudgetIsNeverOverrunAndOutstandingPeersAreReported() {
    ScriptedDialer d = new ScriptedDialer();
    d.failuresLeft.put("b", Integer.MAX_VALUE);
    d.failuresLeft.put("c", Integer.MAX_VALUE);
    d.failuresUseWholeTimeout = true;
    long start = ticker.nanoTime();
    HandshakeIncompleteException e =
        assertThrows(
            HandshakeIncompleteException.class,
            () -> handshake(50, 20, 2).run(peers("a", "ha:1", "b", "hb:2", "c", "hc:3"), d));
    assertTrue(ticker.nanoTime() - start <= Duration.ofSeconds(50).toNanos(), "no overrun");
    assertEquals(3, e.peers());
    assertEquals(1, e.answered());
    // a answers at 0 s; b and c fail a full 20 s each; 2 s backoff; b's clamped 8 s retry fails:
    // queue c, b.
    assertEquals(
        List.of("c", "b"),
        e.outstanding().stream().map(HandshakeIncompleteException.Outstanding::agent).toList());
    HandshakeIncompleteException.Outstanding b = e.outstanding().get(1);
    assertEquals(2, b.attempts());
    assertEquals(Duration.ofSeconds(8), d.dials.getLast().timeout());
    assertEquals("hb:2", b.endpoint());
    assertEquals(d.dials.stream().filter(x -> x.agent().equals("b")).count(), b.attempts());
    assertTrue(
        e.getMessage()
            .startsWith(
                "P2P handshake incomplete after 50.0 s: 1 of 3 peer(s) answered."
                    + " Outstanding: c@hc:3 (1 attempt(s), last error: ConnectException: connection refused by c); b@hb:2"
                    + " (2 attempt(s), last error: ConnectException: connection refused by b)"),
        e.getMessage());
    assertEquals(
        1,
        d.dials.stream().filter(x -> x.agent().equals("a")).count(),
        "a answered once, never re-dialed");
    d.dials.forEach(
        x -> assertTrue(x.timeout().compareTo(Duration.ofSeconds(20)) <= 0, x.toString()));
  }

  @Test
  void aMalformedEndpointFailsOnlyItsOwnPeer() {
    ScriptedDialer d = new ScriptedDialer();
    HandshakeIncompleteException e =
        assertThrows(
            HandshakeIncompleteException.class,
            () ->
                handshake(10, 20, 2)
                    .run(
                        peers(
                            "good",
                            "h:1",
                            "bad",
                            "no-port-here",
                            "worse",
                            "h:notaport",
                            "also",
                            "h:2"),
                        d));
    assertEquals(List.of("good", "also"), d.order(), "malformed endpoints are never dialed");
    assertEquals(
        List.of("bad", "worse"),
        e.outstanding().stream().map(HandshakeIncompleteException.Outstanding::agent).toList());
    assertTrue(e.outstanding().get(0).lastError() instanceof IllegalArgumentException);
    assertTrue(e.getMessage().contains("malformed endpoint 'no-port-here'"), e.getMessage());
    assertTrue(e.outstanding().get(0).attempts() > 1, "retried like any failure");
  }

  @Test
  void noPeersIsANoOp() {
    ScriptedDialer d = new ScriptedDialer();
    Handshake.Report r = handshake(1, 1, 1).run(Map.of(), d);
    assertEquals(0, r.peers());
    assertEquals(List.of(), d.dials);
  }

  @Test
  void boundsComeFromTheEnvironmentAndInvalidValuesFailNamingTheSetting() {
    Handshake.Bounds b =
        Handshake.Bounds.fromSettings(
            Settings.of(
                Map.of(),
                Map.of(
                    "MX_RESHARD_HANDSHAKE_TIMEOUT_S",
                    "30",
                    "MX_RESHARD_HANDSHAKE_ATTEMPT_S",
                    "2.5",
                    "MX_RESHARD_HANDSHAKE_BACKOFF_S",
                    "0.25")));
    assertEquals(
        new Handshake.Bounds(
            Duration.ofSeconds(30), Duration.ofMillis(2500), Duration.ofMillis(250)),
        b);
    for (String bad : new String[] {"0", "-3", "inf", "nan", "soon"}) {
      IllegalArgumentException e =
          assertThrows(
              IllegalArgumentException.class,
              () ->
                  Handshake.Bounds.fromSettings(
                      Settings.of(Map.of(), Map.of("MX_RESHARD_HANDSHAKE_ATTEMPT_S", bad))),
              bad);
      assertTrue(
          e.getMessage().startsWith("MX_RESHARD_HANDSHAKE_ATTEMPT_S='" + bad + "'"),
          e.getMessage());
    }
    assertEquals(
        new Handshake.Bounds(
            Duration.ofSeconds(900), Duration.ofSeconds(20), Duration.ofSeconds(2)),
        Handshake.Bounds.DEFAULT);
    assertEquals(
        Duration.ofSeconds(7),
        Handshake.Bounds.fromSettings(
                Settings.of(
                    Map.of("mx.handshake.timeout", "7"),
                    Map.of("MX_RESHARD_HANDSHAKE_TIMEOUT_S", "30")))
            .total(),
        "the system property wins");
  }

  private static PullSegment seg(String session) {
    return new PullSegment(session, 4096, "p", 0, 64);
  }

  private static ShardTable table(String agent, String endpoint) {
    return new ShardTable(agent, endpoint, new byte[0], List.of(), null);
  }

  @Test
  void onlyThePeersThePlanReadsFromAreDialedFromAllThreeSegmentGroups() {
    TransferPlan plan =
        new TransferPlan(
            List.of(seg("t2")),
            List.of(),
            List.of(new ConvertSource("p", Shape.of(4), DType.BF16, List.of(seg("t0")))),
            List.of(
                new FullPullSource(
                    "s", Shape.of(4), DType.F32, 4, List.of(seg("t3"), seg("t2")), List.of())),
            List.of(),
            3,
            192,
            Map.of());
    List<ShardTable> tables =
        List.of(
            table("t0", "h0:1"), table("t1", "h1:1"), table("t2", "[::2]:5"), table("t3", "h3:1"));
    Map<String, String> endpoints = Handshake.endpointsForPlan(plan, tables);
    assertEquals(
        List.of("t2", "t0", "t3"),
        List.copyOf(endpoints.keySet()),
        "t1 serves nothing the plan reads");
    assertEquals("[::2]:5", endpoints.get("t2"), "endpoints are passed on as published");
    ScriptedDialer d = new ScriptedDialer();
    handshake(900, 20, 2).run(endpoints, d);
    assertEquals(List.of("t2", "t0", "t3"), d.order());
  }

  @Test
  void aPlannedPeerWithoutEndpointFailsNamingIt() {
    TransferPlan plan =
        new TransferPlan(
            List.of(seg("t0"), seg("t1"), seg("t9")),
            List.of(),
            List.of(),
            List.of(),
            List.of(),
            3,
            192,
            Map.of());
    MxException e =
        assertThrows(
            MxException.class,
            () -> Handshake.endpointsForPlan(plan, List.of(table("t0", "h:1"), table("t1", ""))));
    assertTrue(
        e.getMessage().startsWith("2 planned peer(s) published no metadata endpoint: t1, t9"),
        e.getMessage());
  }

  @Test
  void anEmptyPlanDialsNobody() {
    TransferPlan plan =
        new TransferPlan(List.of(), List.of(), List.of(), List.of(), List.of(), 0, 0, Map.of());
    Map<String, String> endpoints = Handshake.endpointsForPlan(plan, List.of(table("t0", "h:1")));
    assertEquals(Map.of(), endpoints);
    ScriptedDialer d = new ScriptedDialer();
    handshake(1, 1, 1).run(endpoints, d);
    assertEquals(List.of(), d.dials);
  }

  @Test
  void sessionsMapToAgentsWhenTheyDiffer() {
    Map<String, String> endpoints =
        Handshake.endpointsFor(
            List.of("s0", "s1", "s2"),
            Map.of("s0", "agentA", "s1", "agentA", "s2", "agentB"),
            Map.of("agentA", "a:1", "agentB", "b:2"));
    assertEquals(List.of("agentA", "agentB"), List.copyOf(endpoints.keySet()));
  }
}
