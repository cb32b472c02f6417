package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportProvider;
import dev.mx.testing.Signals;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Ctrl-C (SIGINT) on a running {@code mx demo}: every worker process it started goes away with it.
 */
class DemoInterruptTest {

  @Test
  void interruptingTheDemoLeavesNoWorkerProcessBehind() throws Exception {
    TransportProvider ucx =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals("ucx"))
            .findFirst()
            .orElse(null);
    String cause =
        ucx == null
            ? "no ucx transport on the class path"
            : ucx.isAvailable() ? null : String.valueOf(ucx.unavailabilityCause());
    if (cause != null) {
      System.err.println(
          "SKIPPED interruptingTheDemoLeavesNoWorkerProcessBehind: UCX unavailable: " + cause);
    }
    assumeTrue(
        cause == null,
        "worker processes need a cross-process transport; UCX unavailable: " + cause);

    List<String> cmd =
        List.of(
            ProcessHandle.current().info().command().orElse("java"),
            "--enable-native-access=ALL-UNNAMED",
            "-cp",
            System.getProperty("java.class.path"),
            "dev.mx.cli.Main",
            "demo",
            "--transport",
            "ucx",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--steps",
            "100000");
    Process demo = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
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
      // A JVM started with SIGINT ignored (a background job of a non-interactive shell) passes that
      // on to the
      // demo, which then cannot see Ctrl-C at all; SIGTERM, which the demo handles the same way,
      // stands in.
      String signal = Signals.isIgnored(Signals.SIGINT) ? "TERM" : "INT";
      if (signal.equals("TERM")) {
        System.err.println(
            "SIGINT is ignored by this test JVM (inherited): interrupting the demo with SIGTERM");
      }
      new ProcessBuilder("kill", "-" + signal, Long.toString(demo.pid()))
          .start()
          .waitFor(10, TimeUnit.SECONDS);
      // Drain stderr so the demo never blocks on a full pipe while it shuts down.
      while (err.readLine() != null) {
        // discard
      }
    }
    assertTrue(demo.waitFor(60, TimeUnit.SECONDS), "the demo exits after SIGINT");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (System.nanoTime() < deadline && workers.stream().anyMatch(ProcessHandle::isAlive)) {
      Thread.sleep(100);
    }
    assertEquals(
        List.of(),
        workers.stream().filter(ProcessHandle::isAlive).map(ProcessHandle::pid).toList(),
        "worker processes left behind after Ctrl-C");
  }
}
