package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.metadata.file.FileMetadataStore;
import dev.mx.metadata.progress.PartyRecords;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.transport.mem.MemTransportProvider;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Liveness-based waits with short settings (stall limit 2 s, heartbeats every 100 ms) over a real
 * {@code file:} store: a follower of trainer ranks whose steps take three stall limits each
 * installs every version without any timeout; a publisher process stopped (SIGSTOP) or killed
 * mid-step fails the wait, naming the rank and its last phase.
 */
class LivenessWaitTest {
  private static final Duration STALL = Duration.ofSeconds(2);
  private static final Duration HEARTBEAT = Duration.ofMillis(100);
  private final String model = "model=liveness-" + UUID.randomUUID();
  private final Transport receiverTransport =
      new MemTransportProvider().create(TransportConfig.of("recv-" + model));
  private final LiveWeights live =
      new LiveWeights(Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
  @TempDir Path dir;
  private MetadataStore store;

  @AfterEach
  void close() {
    live.close();
    receiverTransport.close();
    if (store != null) {
      store.close();
    }
  }

  private VersionFollower follower() {
    RecordedCopy whole =
        new RecordedCopy(
            "w", List.of(), "p", 0, TwoRankTrainer.GLOBAL, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(whole)),
            Map.of("p", new ParamSpec(TwoRankTrainer.GLOBAL, DType.F32)));
    return VersionFollower.builder(store, model)
        .holder("receiver-0")
        .stallLimit(STALL)
        .pollInterval(Duration.ofMillis(20))
        .installer(live)
        .receivers(
            TestReceivers.of(
                receiverTransport,
                capture,
                ReceiverConfig.defaults().withVerify(VerifyMode.WHOLE_SHARDS)))
        .build();
  }

  @Test
  void aFollowerInstallsEveryVersionOfRanksWhoseStepsTakeThreeStallLimits() throws Exception {
    store = new FileMetadataStore(dir);
    int steps = 3;
    ExecutorService ranks = Executors.newFixedThreadPool(2);
    try (TwoRankTrainer trainer =
            new TwoRankTrainer(
                store, model, null, b -> b.heartbeatPeriod(HEARTBEAT).stallLimit(STALL));
        VersionFollower follower = follower()) {
      List<Future<?>> training = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        int rank = r;
        training.add(
            ranks.submit(
                () -> {
                  for (long s = 0; s < steps; s++) {
                    long step = s;
                    trainer.publish(rank, step, () -> trainFor(trainer.ranks.get(rank), step));
                  }
                  return null;
                }));
      }
      for (long s = 0; s < steps; s++) {
        // No cap: the wait lasts while both ranks heartbeat with progress.
        VersionFollower.Followed f = follower.next();
        assertEquals(s, f.step());
        float[] want = new float[16];
        for (int i = 0; i < 16; i++) {
          want[i] = TwoRankTrainer.value(s, i);
        }
        assertArrayEquals(want, live.parameter("p").toArray(ValueLayout.JAVA_FLOAT), "step " + s);
        double waited = ((Number) f.metrics().get("version_wait_s")).doubleValue();
        System.out.printf("step %d installed after waiting %.1f s (stall limit 2 s)%n", s, waited);
      }
      for (Future<?> t : training) {
        t.get(60, TimeUnit.SECONDS);
      }
    } finally {
      ranks.shutdownNow();
    }
  }

  /** A simulated training step of 6 s (three stall limits), reporting progress twice a second. */
  private static void trainFor(VersionedPublisher rank, long step) {
    for (int k = 1; k <= 12; k++) {
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      rank.progress("training step " + step + ", " + k + "/12");
    }
  }

  @Test
  void aStoppedPublisherFailsTheWaitNamingItAndItsLastPhase() throws Exception {
    failsTheWaitOnce("STOP");
  }

  @Test
  void aKilledPublisherFailsTheWaitNamingItAndItsLastPhase() throws Exception {
    failsTheWaitOnce("KILL");
  }

  private void failsTheWaitOnce(String signal) throws Exception {
    store = new FileMetadataStore(dir);
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child =
        new ProcessBuilder(
                java.toString(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                StallingPublisherChild.class.getName(),
                dir.toString(),
                model)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try (VersionFollower follower = follower()) {
      BufferedReader out =
          new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
      assertEquals("WRITING", out.readLine(), "the child is inside its writer");
      awaitPhase("writing step 0, 40 %");
      Process kill =
          new ProcessBuilder("kill", "-" + signal, Long.toString(child.pid())).inheritIO().start();
      assertEquals(0, kill.waitFor(), "kill -" + signal);
      long sent = System.nanoTime();
      NoReadableVersionException e =
          assertTimeoutPreemptively(
              Duration.ofMinutes(2),
              () -> assertThrows(NoReadableVersionException.class, () -> follower.followStep(0)));
      double failedAfter = (System.nanoTime() - sent) / 1e9;
      assertTrue(
          e.getMessage().contains("rank slot 0 (worker stalling-child)")
              && e.getMessage().contains("made no progress")
              && e.getMessage().contains("'writing step 0, 40 %'"),
          e.getMessage());
      System.out.printf(
          "SIG%s: the wait failed %.1f s after the signal (stall limit 2 s): %s%n",
          signal, failedAfter, e.getMessage());
    } finally {
      child.destroyForcibly();
      child.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /** Waits (liveness bound: a minute) until the child's heartbeat record shows {@code phase}. */
  private void awaitPhase(String phase) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
    while (true) {
      List<String> phases =
          PartyRecords.list(store, model).stream().map(SourceRecord::phase).toList();
      if (phases.contains(phase)) {
        return;
      }
      assertTrue(
          System.nanoTime() < deadline, "the child never heartbeated '" + phase + "': " + phases);
      Thread.sleep(20);
    }
  }
}
