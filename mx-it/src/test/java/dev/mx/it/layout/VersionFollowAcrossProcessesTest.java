package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.version.VersionFollower;
import dev.mx.testing.RedisServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The version protocol across real processes: Megatron trainer JVMs ({@code mx publish --steps N},
 * the real command) publish versions of tiny-llama through a {@code file:} store or a real Redis on
 * their own clock, with no barrier; two vLLM receivers (tp=2) in this JVM follow them over UCX,
 * each on its own thread. Each receiver must install steps in increasing order up to the last one
 * (it may skip a version its trainers reclaimed while it was two versions behind, which a loaded
 * machine can cause), and every element it installs must equal the generator's value for that step
 * ({@link VllmReference}). Skips, printing the cause, without UCX (unless {@code
 * -Dmx.test.requireNative=true}) or redis-server.
 */
class VersionFollowAcrossProcessesTest {
  private static final String MODEL = VersionJvms.MODEL;
  private static final String IDENTITY = "versions-it/" + MODEL;
  @TempDir Path dir;

  private static TransportProvider ucx() {
    return VersionJvms.requireUcx();
  }

  /** Over a {@code file:} store: two trainer JVMs, three versions. */
  @Test
  void receiversFollowEveryVersionInOrderThroughAFileStore() throws Exception {
    TransportProvider ucx = ucx();
    follow(ucx, "file:" + dir.resolve("store"), 2, 3, seen -> {});
  }

  /**
   * Over a real redis-server started here and restarted empty mid-run: two trainer JVMs, five
   * versions.
   */
  @Test
  void receiversFollowInOrderThroughARedisRestartedEmptyMidRun() throws Exception {
    TransportProvider ucx = ucx();
    try (RedisServer server = RedisServer.start()) {
      // Mid-run, once every receiver installed two versions, Redis restarts empty: publishers carry
      // on
      // creating versions, receivers resume with the next one.
      follow(
          ucx,
          server.uri(),
          2,
          5,
          seen -> {
            try {
              long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
              while (seen.stream().anyMatch(s -> s.size() < 2)) {
                assertTrue(
                    System.nanoTime() < deadline, "receivers installed two versions: " + seen);
                Thread.sleep(20);
              }
              server.restartEmpty();
              System.out.println("redis restarted empty after " + seen);
            } catch (Exception e) {
              throw new AssertionError("restarting redis", e);
            }
          });
    }
  }

  private void follow(
      TransportProvider ucx,
      String store,
      int trainerTp,
      int steps,
      java.util.function.Consumer<List<List<String>>> duringRun)
      throws Exception {
    ModelArchitecture model = ModelConfigs.load(MODEL);
    InferenceTopology inference = InferenceTopology.tp(2);
    List<Process> trainers = new ArrayList<>();
    List<AutoCloseable> toClose = new ArrayList<>();
    try {
      for (int r = 0; r < trainerTp; r++) {
        // The real command: mx publish --steps N, one JVM per trainer rank.
        trainers.add(
            VersionJvms.publish(
                dir,
                store,
                IDENTITY,
                r,
                trainerTp,
                "--steps",
                Integer.toString(steps),
                "--interval",
                "1"));
      }
      MetadataStore metadata = MetadataStores.open(store);
      toClose.add(metadata);
      List<VersionFollower> followers = new ArrayList<>();
      List<LayoutRefitEndToEndTest.CheckingInstaller> installers = new ArrayList<>();
      for (int r = 0; r < inference.tp(); r++) {
        Transport t =
            ucx.create(new TransportConfig("receiver-" + r, Duration.ofSeconds(30), Map.of()));
        toClose.add(t);
        LayoutRefitEndToEndTest.CheckingInstaller installer =
            new LayoutRefitEndToEndTest.CheckingInstaller(
                new VllmReference(model, inference, r), DType.F32, DType.F32);
        installers.add(installer);
        VersionFollower f =
            VersionJvms.follower(
                metadata,
                IDENTITY,
                t,
                "receiver-" + r,
                r,
                inference.tp(),
                installer,
                Duration.ofSeconds(5),
                d -> d);
        toClose.add(0, f);
        followers.add(f);
      }
      // Each receiver follows on its own thread, as separate receiver processes would.
      List<List<String>> seen = new ArrayList<>();
      List<Future<?>> running = new ArrayList<>();
      ExecutorService pool = Executors.newFixedThreadPool(followers.size());
      try {
        for (int r = 0; r < followers.size(); r++) {
          List<String> mine = Collections.synchronizedList(new ArrayList<>());
          seen.add(mine);
          VersionFollower f = followers.get(r);
          LayoutRefitEndToEndTest.CheckingInstaller installer = installers.get(r);
          running.add(
              pool.submit(
                  () -> {
                    // Until the last step: a receiver that falls two versions behind skips what its
                    // trainers reclaimed.
                    long last = -1;
                    for (int i = 0; last < steps - 1; i++) {
                      // The first version waits for the trainer JVMs to start (slow on a loaded
                      // machine).
                      VersionFollower.Followed got = f.next(Duration.ofSeconds(i == 0 ? 120 : 30));
                      last = got.step();
                      mine.add(
                          got.step()
                              + (installer.lastStep == got.step()
                                      && installer.mismatches.isEmpty()
                                      && !installer.installed.isEmpty()
                                      && (Long) got.metrics().get("verified_shards") > 0
                                  ? ""
                                  : " (installed step "
                                      + installer.lastStep
                                      + ", mismatches "
                                      + installer.mismatches
                                      + ")"));
                    }
                    return null;
                  }));
        }
        duringRun.accept(seen);
        for (Future<?> f : running) {
          f.get(300, TimeUnit.SECONDS);
        }
      } catch (ExecutionException e) {
        throw new AssertionError(
            "a follower failed after "
                + seen
                + ": "
                + e.getCause()
                + VersionJvms.logs(dir, trainers),
            e.getCause());
      } finally {
        pool.shutdownNow();
      }
      for (int r = 0; r < followers.size(); r++) {
        List<String> got = seen.get(r);
        System.out.println("receiver " + r + " installed steps " + got + " of 0.." + (steps - 1));
        long previous = -1;
        for (String entry : got) {
          assertTrue(
              entry.matches("\\d+"),
              "receiver " + r + ": every installed element equals the generator's: " + got);
          assertTrue(
              Long.parseLong(entry) > previous, "receiver " + r + ": steps in order: " + got);
          previous = Long.parseLong(entry);
        }
        assertEquals(steps - 1, previous, "receiver " + r + " ends on the last step: " + got);
      }
      for (Process p : trainers) {
        BufferedReader out =
            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        for (int step = 0; step < steps; step++) {
          String line = out.readLine();
          assertTrue(
              line != null
                  && line.startsWith("trainer rank ")
                  && line.contains(": published step " + step + " as version 'step-" + step + "'"),
              line);
        }
      }
      WeightVersion last = metadata.versions().latestReadable(IDENTITY).orElseThrow();
      assertEquals(steps - 1, last.step());
      for (Process p : trainers) {
        // mx publish serves until interrupted: SIGTERM, as an operator would.
        assertEquals(
            0, new ProcessBuilder("kill", "-TERM", Long.toString(p.pid())).start().waitFor());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "trainer exits on SIGTERM");
        assertEquals(143, p.exitValue(), "trainer exit status after SIGTERM");
      }
      assertEquals(
          List.of(),
          metadata.versions().versions(IDENTITY).stream()
              .filter(WeightVersion::isReadable)
              .toList(),
          "signalled trainers leave their slots STALE");
    } finally {
      Closeables.closeAll(toClose);
      trainers.forEach(Process::destroyForcibly);
    }
  }
}
