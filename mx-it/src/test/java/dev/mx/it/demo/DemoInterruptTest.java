package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportProvider;
import dev.mx.testing.Eventually;
import dev.mx.testing.Signals;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Ctrl-C (SIGINT) on a running {@code mx demo}: every worker process it started goes away with it,
 * and so does every shared-memory file its trainers made.
 */
class DemoInterruptTest {
  /** Liveness bounds, not timing expectations. */
  private static final Duration START_BOUND = Duration.ofMinutes(5);

  private static final Duration EXIT_BOUND = Duration.ofSeconds(90);

  @Test
  void interruptingTheDemoLeavesNoWorkerProcessBehind() throws Exception {
    assumeTransport("ucx");
    Process demo =
        startDemo("ucx", Map.of(), ProcessBuilder.Redirect.PIPE)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    List<ProcessHandle> workers = new ArrayList<>();
    try (BufferedReader err =
        new BufferedReader(new InputStreamReader(demo.getErrorStream(), StandardCharsets.UTF_8))) {
      String line;
      // Wait until the job runs warm steps, then interrupt it as Ctrl-C would.
      while ((line = err.readLine()) != null && !line.contains("step 3/")) {
        // keep reading
      }
      assertTrue(line != null, "the demo ended before its third step");
      workers.addAll(demo.descendants().filter(ProcessHandle::isAlive).toList());
      assertEquals(4, workers.size(), "two trainer and two receiver JVMs run: " + workers);
      interrupt(demo);
      // Drain stderr so the demo never blocks on a full pipe while it shuts down.
      while (err.readLine() != null) {
        // discard
      }
    }
    assertTrue(demo.waitFor(60, TimeUnit.SECONDS), "the demo exits after SIGINT");
    assertEquals(
        List.of(),
        Eventually.until(() -> alive(workers), List::isEmpty, Duration.ofSeconds(30)),
        "worker processes left behind after Ctrl-C");
  }

  @Test
  void interruptingTheDemoOverShmLeavesNoSharedMemoryFileOfItsTrainers() throws Exception {
    assumeTransport("shm");
    // Every shm file of this run lands in a folder of its own (children inherit MX_SHM_DIR).
    Path shm = Files.createTempDirectory(Path.of("/dev/shm"), "mx-it-interrupt-");
    Path log = Files.createTempFile("mx-it-interrupt-", ".log");
    Process demo =
        startDemo(
                "shm",
                Map.of("MX_SHM_DIR", shm.toString()),
                ProcessBuilder.Redirect.to(log.toFile()))
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      // The two trainers have allocated their buffer sets: region files of two processes.
      Set<String> owners =
          Eventually.until(
              () -> regionFileOwners(shm), o -> o.size() >= 2 || !demo.isAlive(), START_BOUND);
      assertEquals(2, owners.size(), "trainer region files in " + shm + "; " + tail(log));
      List<ProcessHandle> workers = demo.descendants().toList();
      interrupt(demo);
      assertTrue(demo.waitFor(EXIT_BOUND.toSeconds(), TimeUnit.SECONDS), "the demo exits");
      assertEquals(
          List.of(),
          Eventually.until(() -> alive(workers), List::isEmpty, EXIT_BOUND),
          "worker processes left behind");
      assertEquals(
          List.of(),
          Eventually.until(() -> files(shm), List::isEmpty, EXIT_BOUND),
          "shared-memory files of the interrupted run (trainers " + owners + ") in " + shm);
      assertTrue(
          Files.readString(log).contains("stopped by a signal: stopping the workers"), tail(log));
    } finally {
      demo.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      try (Stream<Path> left = Files.walk(shm)) {
        left.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
      Files.deleteIfExists(log);
    }
  }

  private static void assumeTransport(String name) {
    TransportProvider provider =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals(name))
            .findFirst()
            .orElse(null);
    String cause =
        provider == null
            ? "no " + name + " transport on the class path"
            : provider.isAvailable() ? null : String.valueOf(provider.unavailabilityCause());
    if (cause != null) {
      System.err.println("SKIPPED: " + name + " unavailable: " + cause);
    }
    assumeTrue(
        cause == null,
        "worker processes need a cross-process transport; " + name + " unavailable: " + cause);
  }

  /** The demo over {@code transport}: two trainer and two receiver JVMs, until interrupted. */
  private static ProcessBuilder startDemo(
      String transport, Map<String, String> env, ProcessBuilder.Redirect stderr) {
    List<String> cmd =
        List.of(
            ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path"),
            "dev.mx.cli.Main",
            "demo",
            "--transport",
            transport,
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--steps",
            "100000");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(stderr);
    pb.environment().putAll(env);
    return pb;
  }

  /**
   * Sends SIGINT as Ctrl-C would. A JVM started with SIGINT ignored (a background job of a
   * non-interactive shell) passes that on to the demo, which then cannot see Ctrl-C at all;
   * SIGTERM, which the demo handles the same way, stands in.
   */
  private static void interrupt(Process demo) throws IOException, InterruptedException {
    String signal = Signals.isIgnored(Signals.SIGINT) ? "TERM" : "INT";
    if (signal.equals("TERM")) {
      System.err.println(
          "SIGINT is ignored by this test JVM (inherited): interrupting the demo with SIGTERM");
    }
    assertEquals(
        0,
        new ProcessBuilder("kill", "-" + signal, Long.toString(demo.pid())).start().waitFor(),
        "kill -" + signal);
  }

  private static List<Long> alive(List<ProcessHandle> workers) {
    return workers.stream().filter(ProcessHandle::isAlive).map(ProcessHandle::pid).toList();
  }

  private static List<String> files(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  /**
   * The pids owning region files ({@code mx-shm-<pidns>-<pid>-<start>-<nonce>-r<N>}): trainers'
   * buffers, which receivers do not make.
   */
  private static Set<String> regionFileOwners(Path dir) throws IOException {
    return files(dir).stream()
        .map(n -> n.split("-"))
        .filter(p -> p.length >= 7 && p[0].equals("mx") && p[6].matches("r[0-9]+"))
        .map(p -> p[3])
        .collect(Collectors.toCollection(java.util.TreeSet::new));
  }

  private static String tail(Path log) throws IOException {
    List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
    return "the demo's log ends: "
        + String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
  }
}
