package dev.mx.transport.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.error.TransportException;
import dev.mx.api.error.TransportTimeoutException;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.transport.testsuite.tool.PublisherProcess;
import dev.mx.transport.testsuite.tool.PublisherProcess.Region;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Publishers that die or stall while a receiver reads from them. */
class UcxPeerFailureTest {
  private static final long MIB = 1 << 20;
  private static final Duration START = Duration.ofSeconds(60);
  private Arena arena;
  private Transport receiver;
  private MemorySegment dst;

  @BeforeEach
  @SuppressWarnings("MustBeClosedChecker") // closed in @AfterEach
  void openReceiver() {
    UcxTestSupport.requireUcx();
    arena = Arena.ofShared();
    receiver =
        new UcxTransportProvider()
            .create(TransportConfig.of("receiver").withTimeout(Duration.ofSeconds(30)));
    dst = arena.allocate(64 * MIB, 4096);
    receiver.register(dst);
  }

  @AfterEach
  void closeReceiver() {
    // Null when set-up skipped; the arena also when the receiver failed to start.
    if (receiver != null) {
      receiver.close();
    }
    if (arena != null) {
      arena.close();
    }
  }

  private static ReadDescriptor whole(PublisherProcess p, MemorySegment into) {
    Region r = p.regions().getFirst();
    return new ReadDescriptor(p.session(), r.base(), into.address(), r.length());
  }

  private void readAndVerify(PublisherProcess p) {
    dst.fill((byte) 0);
    receiver.read(List.of(whole(p, dst)));
    assertEquals(
        -1,
        p.pattern().mismatch(dst, 0, 0, 0, p.regions().getFirst().length()),
        "bytes from " + p.session());
  }

  @Test
  void killingThePublisherMidReadFailsTheReadNamingItWithinTheTimeoutAndAFreshPublisherWorks()
      throws Exception {
    Duration timeout = Duration.ofSeconds(10);
    try (PublisherProcess doomed =
        PublisherProcess.launch("ucx", "doomed").seed(5).regions(List.of(64 * MIB)).start(START)) {
      receiver.connect("doomed", doomed.metadata());
      readAndVerify(doomed);
      // 16 GiB in 64 MiB GETs: seconds of work, so the kill lands in the middle of it.
      List<ReadDescriptor> large = Collections.nCopies(256, whole(doomed, dst));
      CompletableFuture<Throwable> outcome =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  receiver.read(large, timeout);
                  return null;
                } catch (Throwable t) {
                  return t;
                }
              });
      Thread.sleep(500);
      assertFalse(
          outcome.isDone(),
          "the large read was still running when the publisher was killed: " + outcome);
      long killedAt = System.nanoTime();
      doomed.kill();

      Throwable t = outcome.get(timeout.toSeconds() + 30, TimeUnit.SECONDS); // a hang fails here
      double seconds = (System.nanoTime() - killedAt) / 1e9;
      TransportException e =
          assertInstanceOf(TransportException.class, t, "the read fails with a transport error");
      System.out.printf("read failed %.2f s after the publisher was killed: %s%n", seconds, e);
      assertEquals("doomed", e.peer());
      assertTrue(e.getMessage().contains("'doomed'"), e.getMessage());
      assertTrue(
          seconds <= timeout.toSeconds() + 5,
          "failed " + seconds + " s after the kill; the timeout is " + timeout);

      // Reading from the dead peer again fails the same way, without hanging.
      TransportException again =
          assertThrows(
              TransportException.class,
              () -> receiver.read(List.of(whole(doomed, dst)), Duration.ofSeconds(5)));
      assertEquals("doomed", again.peer());
    }
    try (PublisherProcess fresh =
        PublisherProcess.launch("ucx", "fresh").seed(6).regions(List.of(16 * MIB)).start(START)) {
      receiver.connect("fresh", fresh.metadata());
      readAndVerify(fresh);
    }
  }

  @Test
  void aStalledPublisherTimesOutNamingItAndTheNextReadReconnects() throws Exception {
    try (PublisherProcess stalled =
        PublisherProcess.launch("ucx", "stalled").seed(7).regions(List.of(8 * MIB)).start(START)) {
      receiver.connect("stalled", stalled.metadata());
      readAndVerify(stalled);
      signal("STOP", stalled.pid());
      try {
        TransportTimeoutException e =
            assertThrows(
                TransportTimeoutException.class,
                () -> receiver.read(List.of(whole(stalled, dst)), Duration.ofSeconds(2)));
        assertEquals("stalled", e.peer());
        assertTrue(e.getMessage().contains("PT2S"), e.getMessage());
      } finally {
        signal("CONT", stalled.pid());
      }
      readAndVerify(stalled);
    }
  }

  /**
   * Issue 14: a publisher stopped in the middle of serving a large read, past the receiver's
   * timeout, must survive when it resumes, whether the receiver only dropped its endpoint (it times
   * out and force-closes it) or is gone altogether (its endpoint, worker and context closed while
   * the publisher was stopped), and serve the next read.
   *
   * <p>With {@code established} false the second receiver's first read is the large one, so its
   * connection may still be being set up when the publisher stops. That case is a known UCX 1.13.1
   * abort: the publisher's wireup reply is still queued on its TCP endpoint when the receiver goes
   * away, and {@code ucp_request_send_state_ff} asserts on it ("got REP message"). mx cannot reach
   * that queue; it runs only with {@code -Dmx.test.ucxKnownAborts=true}.
   */
  @ParameterizedTest(name = "second receiver connected before the stop: {0}")
  @ValueSource(booleans = {true, false})
  void aPublisherStoppedMidReadPastTheReceiversTimeoutSurvivesWhenItResumes(boolean established)
      throws Exception {
    if (!established && !Boolean.getBoolean("mx.test.ucxKnownAborts")) {
      String known =
          "a receiver that vanishes while its UCX connection is being set up with a stopped publisher"
              + " aborts the publisher inside UCX 1.13.1 ('got REP message'); run with -Dmx.test.ucxKnownAborts=true";
      System.err.println(
          "SKIPPED aPublisherStoppedMidReadPastTheReceiversTimeoutSurvivesWhenItResumes[false]: "
              + known);
      assumeTrue(false, known);
    }
    try (PublisherProcess stalled =
        PublisherProcess.launch("ucx", "paused").seed(8).regions(List.of(64 * MIB)).start(START)) {
      Transport gone =
          new UcxTransportProvider()
              .create(TransportConfig.of("gone").withTimeout(Duration.ofSeconds(3)));
      try {
        MemorySegment into = arena.allocate(64 * MIB, 4096);
        gone.register(into);
        for (Transport r : List.of(receiver, gone)) {
          r.connect("paused", stalled.metadata());
        }
        readAndVerify(stalled);
        if (established) {
          gone.read(
              List.of(whole(stalled, into))); // its connection is set up before the publisher stops
        }
        List<ReadDescriptor> large = Collections.nCopies(256, whole(stalled, dst));
        List<ReadDescriptor> largeToo = Collections.nCopies(256, whole(stalled, into));
        List<CompletableFuture<Throwable>> outcomes =
            List.of(
                CompletableFuture.supplyAsync(
                    () -> failureOf(() -> receiver.read(large, Duration.ofSeconds(3)))),
                CompletableFuture.supplyAsync(
                    () -> failureOf(() -> gone.read(largeToo, Duration.ofSeconds(3)))));
        Thread.sleep(300);
        signal("STOP", stalled.pid());
        try {
          for (CompletableFuture<Throwable> o : outcomes) {
            TransportTimeoutException e =
                assertInstanceOf(TransportTimeoutException.class, o.get(60, TimeUnit.SECONDS));
            assertEquals("paused", e.peer());
          }
          gone.close(); // the second receiver goes away entirely while the publisher is stopped
          Thread.sleep(5_000); // well past the timeout and several keepalive intervals
        } finally {
          signal("CONT", stalled.pid());
        }
      } finally {
        gone.close();
      }
      Thread.sleep(3000); // the publisher now meets both closed endpoints
      assertTrue(stalled.isAlive(), "the publisher died after it resumed: " + stalled.logTail());
      readAndVerify(stalled);
      assertTrue(stalled.isAlive(), "the publisher died after serving again: " + stalled.logTail());
    }
  }

  private static Throwable failureOf(Runnable r) {
    try {
      r.run();
      return null;
    } catch (Throwable t) {
      return t;
    }
  }

  private static void signal(String name, long pid) throws Exception {
    Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(pid)).inheritIO().start();
    assertEquals(0, kill.waitFor(), "kill -" + name + " " + pid);
  }
}
