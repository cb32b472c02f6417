package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.DType;
import dev.mx.cli.Main;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.ExpertPlacement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmReference;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs {@code mx demo} in this JVM (its workers in child JVMs or threads) and checks what it left
 * behind.
 */
record DemoRun(int code, String out, String err) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Runs the demo; stdout and stderr are captured. */
  static DemoRun run(String... args) {
    List<String> all = new ArrayList<>(List.of("demo"));
    all.addAll(List.of(args));
    return command(all.toArray(String[]::new));
  }

  /**
   * Runs {@code mx demo --in-process ARGS}, which must exit 2 (a bad option) with {@code named} in
   * its error.
   */
  static void assertRefused(String named, String... args) {
    List<String> all = new ArrayList<>(List.of("--in-process"));
    all.addAll(List.of(args));
    DemoRun r = run(all.toArray(String[]::new));
    assertEquals(2, r.code(), r.toString());
    assertTrue(r.err().contains(named), "names " + named + ": " + r.err());
  }

  /** Runs any mx command line ({@code receive --rank 0 ...}); stdout and stderr are captured. */
  static synchronized DemoRun command(String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int code = Main.execute(args);
      return new DemoRun(
          code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(oldOut);
      System.setErr(oldErr);
    }
  }

  /** {@code mx receive} arguments of a tp=2 inference rank following {@code steps} versions. */
  static List<String> followingReceiver(int rank, int steps, Path dump, List<String> job) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "receive",
                "--rank",
                Integer.toString(rank),
                "--inference",
                "tp=2",
                "--follow",
                "--steps",
                Integer.toString(steps),
                "--dump",
                dump.toString(),
                "--json",
                "--timeout",
                "120"));
    a.addAll(job);
    return a;
  }

  /**
   * Starts {@code mx ARGS} in a JVM of its own, with this test's class path; stderr to {@code log}.
   */
  static Process mxProcess(Path log, String... args) throws java.io.IOException {
    return mxProcess(log, List.of(), args);
  }

  /** As {@link #mxProcess(Path, String...)}, the JVM started with {@code jvmOptions} as well. */
  static Process mxProcess(Path log, List<String> jvmOptions, String... args)
      throws java.io.IOException {
    List<String> cmd =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "--add-modules",
                "jdk.incubator.vector"));
    cmd.addAll(jvmOptions);
    cmd.addAll(
        List.of(
            "-cp",
            System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
            "dev.mx.cli.Main"));
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd).redirectError(log.toFile()).start();
  }

  /**
   * Starts {@code mx serve --port 0} (memory: backend), adds it to {@code all}, and returns the
   * {@code host:port} its first line says it listens on; its log goes to {@code dir/serve.log}.
   */
  static String startServe(Path dir, List<Process> all) throws Exception {
    Process serve = mxProcess(dir.resolve("serve.log"), "serve", "--port", "0");
    all.add(serve);
    String first =
        new java.io.BufferedReader(
                new java.io.InputStreamReader(
                    serve.getInputStream(), java.nio.charset.StandardCharsets.UTF_8))
            .readLine();
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("serving RefitService on (\\S+) ")
            .matcher(String.valueOf(first));
    assertTrue(m.find(), first + "\n" + Files.readString(dir.resolve("serve.log")));
    return m.group(1);
  }

  /** Stops every process a test started: asked first, killed after 30 s. */
  static void destroyAll(List<Process> processes) throws InterruptedException {
    processes.forEach(Process::destroy);
    for (Process p : processes) {
      if (!p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
        p.destroyForcibly();
      }
    }
  }

  /** {@code mx publish} arguments of a trainer rank publishing {@code steps} versions. */
  static List<String> steppingPublisher(int rank, int steps, String interval, List<String> job) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "publish",
                "--rank",
                Integer.toString(rank),
                "--steps",
                Integer.toString(steps),
                "--interval",
                interval));
    a.addAll(job);
    return a;
  }

  /** The job options both sides share: a tp=2 f32 trainer of {@code model}. */
  static List<String> tp2Job(String model, String metadata, String transport, String identity) {
    return List.of(
        "--model",
        model,
        "--trainer",
        "tp=2",
        "--trainer-dtype",
        "f32",
        "--metadata",
        metadata,
        "--transport",
        transport,
        "--identity",
        identity);
  }

  /**
   * The JSON report a rank process prints on stdout, once it exited 0 within 240 s; a failure shows
   * its stdout and its log.
   */
  static JsonNode successfulReport(Process p, Path log) throws Exception {
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(240, java.util.concurrent.TimeUnit.SECONDS), log + ": finishes");
    assertEquals(0, p.exitValue(), log + ": " + out + "\n" + Files.readString(log));
    JsonNode report = JSON.readTree(out);
    assertTrue(report.get("ok").asBoolean(), out);
    return report;
  }

  JsonNode json() throws Exception {
    return JSON.readTree(out);
  }

  @Override
  public String toString() {
    return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
  }

  /** No process started by this JVM is still running (the demo must leave no child behind). */
  static void assertNoChildProcesses() throws InterruptedException {
    long deadline = System.nanoTime() + 60_000_000_000L; // a liveness bound, generous under load
    List<ProcessHandle> left = List.of();
    while (System.nanoTime() < deadline) {
      left = ProcessHandle.current().descendants().filter(ProcessHandle::isAlive).toList();
      if (left.isEmpty()) {
        return;
      }
      Thread.sleep(100);
    }
    assertEquals(
        List.of(),
        left.stream().map(p -> p.pid() + " " + p.info().commandLine().orElse("?")).toList(),
        "child processes left behind");
  }

  /**
   * Checks every element of every dumped parameter of every receiver against the value computed
   * from the generator and the vLLM layout rules (zero for vocabulary padding), for the step {@code
   * run.json} names.
   */
  static void assertDumpMatchesGenerator(
      Path dump,
      String model,
      int tp,
      int ep,
      String trainerDtype,
      String inferenceDtype,
      long expectedStep)
      throws Exception {
    assertDumpMatchesGenerator(
        dump, "receiver-", model, tp, ep, trainerDtype, inferenceDtype, expectedStep, null);
  }

  /**
   * As {@link #assertDumpMatchesGenerator(Path, String, int, int, String, String, long)} for the
   * receivers whose dumps are named {@code prefix<rank>.safetensors} ({@code receiver-}, or {@code
   * group1-receiver-} for a later inference group's), with the inference experts placed by {@code
   * placement} (null: the trainer's order): each physical slot must hold its logical expert.
   */
  static void assertDumpMatchesGenerator(
      Path dump,
      String prefix,
      String model,
      int tp,
      int ep,
      String trainerDtype,
      String inferenceDtype,
      long expectedStep,
      ExpertPlacement placement)
      throws Exception {
    JsonNode run = JSON.readTree(Files.readString(dump.resolve("run.json")));
    assertEquals(expectedStep, run.get("last_step").asLong(), "run.json last_step");
    assertEquals(model, run.get("model").asText());
    for (String key :
        List.of(
            "trainer",
            "inference",
            "steps",
            "trainer_dtype",
            "inference_dtype",
            "transport",
            "wire")) {
      assertTrue(run.has(key), "run.json has " + key + ": " + run);
    }
    ModelArchitecture arch = ModelConfigs.load(model);
    DType from = DType.parse(trainerDtype);
    DType to = DType.parse(inferenceDtype);
    for (int r = 0; r < tp; r++) {
      VllmReference reference =
          new VllmReference(arch, new InferenceTopology(tp, ep), r, placement);
      try (SafetensorsFile f = SafetensorsFile.open(dump.resolve(prefix + r + ".safetensors"))) {
        assertTrue(!f.tensors().isEmpty(), prefix + r + " dumped parameters");
        for (SafetensorsTensor t : f.tensors()) {
          assertEquals(reference.shape(t.name()), t.shape(), t.name());
          assertEquals(to, t.dtype(), t.name());
          List<String> bad = reference.mismatches(t.name(), t.data(), expectedStep, from, to, 3);
          assertEquals(
              List.of(),
              bad,
              "receiver " + r + " parameter " + t.name() + " at step " + expectedStep);
        }
      }
    }
  }
}
