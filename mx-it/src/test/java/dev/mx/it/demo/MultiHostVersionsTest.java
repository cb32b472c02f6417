package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.transport.TransportProvider;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real multi-host run of the version protocol: three Linux network namespaces ("hosts"), each
 * with its own veth pair into a bridge and an address of its own, hold Redis, the two trainer ranks
 * ({@code mx publish --steps 3}) and the two receiver ranks ({@code mx receive --follow --steps
 * 3}); UCX moves the bytes over TCP between them. Every receiver must report steps 0, 1, 2 and dump
 * weights equal to the generator's for step 2, element by element. The namespaces and the bridge
 * are removed even when the test fails. Skips, printing the cause, where namespaces cannot be
 * created (not root, no {@code ip}), or without UCX or redis-server.
 */
class MultiHostVersionsTest {
  private static final String MODEL = "tiny-llama";
  @TempDir Path dir;

  private final String tag =
      Integer.toString(ThreadLocalRandom.current().nextInt(36 * 36 * 36), 36);
  private final int subnet = 100 + ThreadLocalRandom.current().nextInt(150);
  private final List<String> namespaces = new ArrayList<>();
  private String bridge;

  private static int run(String... cmd) throws Exception {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", cmd) + " did not finish");
    }
    if (p.exitValue() != 0) {
      System.err.println(String.join(" ", cmd) + " -> " + p.exitValue() + ": " + out.trim());
    }
    return p.exitValue();
  }

  private static void must(String... cmd) throws Exception {
    assertEquals(0, run(cmd), String.join(" ", cmd));
  }

  private String address(int host) {
    return "10.213." + subnet + "." + (10 + host);
  }

  /** One "host": a namespace with a veth pair into the bridge and its own address. */
  private String host(int i) throws Exception {
    String ns = "mxv" + tag + "-" + i;
    must("ip", "netns", "add", ns);
    namespaces.add(ns);
    String outside = "mxv" + tag + "h" + i;
    String inside = "mxv" + tag + "n" + i;
    must("ip", "link", "add", outside, "type", "veth", "peer", "name", inside);
    must("ip", "link", "set", inside, "netns", ns);
    must("ip", "link", "set", outside, "master", bridge);
    must("ip", "link", "set", outside, "up");
    must("ip", "netns", "exec", ns, "ip", "addr", "add", address(i) + "/24", "dev", inside);
    must("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up");
    must("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
    return ns;
  }

  private void tearDown() throws Exception {
    for (String ns : namespaces.reversed()) {
      run("ip", "netns", "del", ns); // deletes the veth pairs with it
    }
    if (bridge != null) {
      run("ip", "link", "del", bridge);
    }
  }

  private static String skipCause() throws Exception {
    TransportProvider ucx =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals("ucx"))
            .findFirst()
            .orElse(null);
    if (ucx == null || !ucx.isAvailable()) {
      return "UCX unavailable: " + (ucx == null ? "no ucx transport" : ucx.unavailabilityCause());
    }
    if (!Files.isExecutable(Path.of("/usr/bin/redis-server"))) {
      return "/usr/bin/redis-server is not installed";
    }
    String probe = "mxvprobe" + ThreadLocalRandom.current().nextInt(1000);
    try {
      if (run("ip", "netns", "add", probe) != 0) {
        return "cannot create network namespaces (ip netns add failed; needs root and iproute2)";
      }
    } catch (java.io.IOException e) {
      return "cannot run ip (iproute2): " + e.getMessage();
    }
    run("ip", "netns", "del", probe);
    return null;
  }

  private Process java(String ns, Path log, String... args) throws Exception {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "ip",
                "netns",
                "exec",
                ns,
                "env",
                "MX_UCX_TLS=tcp",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                dev.mx.cli.Main.class.getName()));
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectError(log.toFile()).start();
  }

  @Test
  void trainersAndReceiversOnDifferentHostsFollowThreeVersionsThroughRedis() throws Exception {
    String cause = skipCause();
    if (cause != null && Boolean.getBoolean("mx.test.requireNative")) {
      throw new AssertionError("required (-Dmx.test.requireNative=true) but " + cause);
    }
    if (cause != null) {
      System.err.println("SKIPPED MultiHostVersionsTest: " + cause);
    }
    assumeTrue(cause == null, cause);
    List<Process> all = new ArrayList<>();
    try {
      bridge = "mxv" + tag + "br";
      must("ip", "link", "add", bridge, "type", "bridge");
      must("ip", "link", "set", bridge, "up");
      String redisHost = host(0);
      String trainHost = host(1);
      String recvHost = host(2);
      Process redis =
          new ProcessBuilder(
                  "ip",
                  "netns",
                  "exec",
                  redisHost,
                  "/usr/bin/redis-server",
                  "--bind",
                  address(0),
                  "--port",
                  "6379",
                  "--protected-mode",
                  "no",
                  "--save",
                  "",
                  "--appendonly",
                  "no")
              .redirectErrorStream(true)
              .redirectOutput(dir.resolve("redis.log").toFile())
              .start();
      all.add(redis);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
      while (run("ip", "netns", "exec", recvHost, "redis-cli", "-h", address(0), "ping") != 0) {
        assertTrue(
            System.nanoTime() < deadline && redis.isAlive(),
            "redis on host 0 answers host 2: " + Files.readString(dir.resolve("redis.log")));
        Thread.sleep(100);
      }
      String metadata = "redis://" + address(0) + ":6379";
      List<String> job = DemoRun.tp2Job(MODEL, metadata, "ucx", "multi-host-" + tag);
      Path dump = dir.resolve("dump");
      List<Process> receivers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.followingReceiver(r, 3, dump, job);
        receivers.add(
            java(recvHost, dir.resolve("receiver-" + r + ".log"), a.toArray(String[]::new)));
      }
      all.addAll(receivers);
      List<Process> trainers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.steppingPublisher(r, 3, "2", job);
        trainers.add(
            java(trainHost, dir.resolve("trainer-" + r + ".log"), a.toArray(String[]::new)));
      }
      all.addAll(trainers);
      for (int r = 0; r < 2; r++) {
        JsonNode report =
            DemoRun.successfulReport(receivers.get(r), dir.resolve("receiver-" + r + ".log"));
        String out = report.toString();
        List<Long> steps = new ArrayList<>();
        report.get("steps").forEach(s -> steps.add(s.get("step").asLong()));
        assertEquals(
            List.of(0L, 1L, 2L),
            steps,
            "receiver " + r + " reports the publishers' steps in order");
        assertEquals(2, report.get("run").get("last_step").asLong());
      }
      DemoRun.assertDumpMatchesGenerator(dump, MODEL, 2, 1, "f32", "f32", 2);
      for (Process t : trainers) {
        assertEquals(0, run("kill", "-TERM", Long.toString(t.pid())));
        assertTrue(t.waitFor(60, TimeUnit.SECONDS), "trainer exits on SIGTERM");
        assertEquals(143, t.exitValue(), "trainer exit status after SIGTERM");
      }
    } finally {
      all.forEach(Process::destroyForcibly);
      for (Process p : all) {
        p.waitFor(10, TimeUnit.SECONDS);
      }
      tearDown();
    }
  }
}
