package dev.mx.cli.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.mx.api.error.MxException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A worker in a child JVM started with this JVM's java binary and class path. Its stderr goes to a
 * log file whose tail is quoted when it fails; its stdout carries protocol replies.
 */
final class ChildWorker implements WorkerHandle {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String EOF = "\u0000eof";

  private final String name;
  private final Process process;
  private final Path log;
  private final Writer stdin;
  private final BlockingQueue<String> replies = new ArrayBlockingQueue<>(64);
  private volatile boolean stalled;

  /**
   * Lines the child printed to stdout outside the protocol (e.g. native library logs), quoted on
   * failure.
   */
  private final java.util.Queue<String> strayOutput =
      new java.util.concurrent.ConcurrentLinkedQueue<>();

  private final boolean verbose;

  /** The young generation bound of every child JVM. */
  static final String MAX_NEW_SIZE = "64m";

  /** Extra JVM options for the children, whitespace-separated. */
  static final String JVM_OPTIONS_PROPERTY = "mx.demo.jvmOptions";

  static final String JVM_OPTIONS_ENV = "MX_DEMO_JVM_OPTIONS";

  /** As the {@code mx} launcher passes it. */
  static final String UNSAFE_MEMORY_ACCESS = "--sun-misc-unsafe-memory-access=allow";

  /**
   * The heap options of every child, then the extra ones {@code -Dmx.demo.jvmOptions} or {@code
   * MX_DEMO_JVM_OPTIONS} give (whitespace-separated, last so they win: e.g. {@code -Xlog:gc} or
   * another {@code -XX:MaxNewSize}).
   */
  static List<String> jvmOptions(dev.mx.api.util.Settings settings) {
    List<String> out = new ArrayList<>();
    out.add("-XX:+UseParallelGC");
    // A bounded young generation: the weights live off-heap and the live heap is tens of MB, but
    // the generator's short-lived garbage let ParallelGC grow each trainer's eden to ~1.8 GB; with
    // two buffer sets per trainer and two prepared receivers per rank that left the host short of
    // memory, and direct reclaim slowed the later warm steps (docs/performance/mx-cli.md). 64 MB
    // (from 256 MB) keeps four trainer heaps under 0.2 GB each: the demo's peak went from 2.60 to
    // 2.22 times the weights with the same step times.
    out.add("-XX:MaxNewSize=" + MAX_NEW_SIZE);
    // protobuf-java (the mx:// store's gRPC messages) reads arrays through sun.misc.Unsafe; Java
    // 24+ warns on its first use, four lines in every worker log, unless told to allow it.
    out.add(UNSAFE_MEMORY_ACCESS);
    String extra = settings.string(JVM_OPTIONS_PROPERTY, JVM_OPTIONS_ENV, "");
    for (String o : extra.split("\\s+")) {
      if (!o.isEmpty()) {
        out.add(o);
      }
    }
    return out;
  }

  /**
   * Starts the child.
   *
   * @param verbose copy the child's log to this process's stderr as well as to {@code log}
   */
  ChildWorker(
      String name, List<String> workerArgs, Path log, Map<String, String> env, boolean verbose)
      throws IOException {
    this.name = name;
    this.log = log;
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.add("--enable-native-access=ALL-UNNAMED");
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
      cmd.add("--add-modules");
      cmd.add("jdk.incubator.vector");
    }
    cmd.addAll(jvmOptions(dev.mx.api.util.Settings.system()));
    // The child logs everything to its own file; its tail is quoted when it fails.
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
    if (verbose) {
      // --verbose shows the per-step stage records, which a library logs at DEBUG.
      cmd.add("-Dorg.slf4j.simpleLogger.log.dev.mx.refit.records=debug");
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("dev.mx.cli.Main");
    cmd.addAll(workerArgs);
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(log.toFile());
    this.verbose = verbose;
    pb.environment().putAll(env);
    this.process = pb.start();
    this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
    Thread reader = new Thread(this::pumpReplies, "mx-demo-" + name.replace(' ', '-'));
    reader.setDaemon(true);
    reader.start();
  }

  private void pumpReplies() {
    try (BufferedReader r =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      String line;
      while ((line = r.readLine()) != null) {
        if (line.startsWith(WorkerHost.REPLY_PREFIX)) {
          replies.put(line.substring(WorkerHost.REPLY_PREFIX.length()));
        } else {
          strayOutput.add(line);
        }
      }
    } catch (IOException | InterruptedException ignored) {
      // The process ended; EOF below tells the caller.
    }
    replies.offer(EOF);
  }

  @Override
  public String name() {
    return name;
  }

  long pid() {
    return process.pid();
  }

  @Override
  @SuppressWarnings("unchecked")
  public Map<String, Object> call(Map<String, Object> command, Duration timeout) throws Exception {
    try {
      stdin.write(JSON.writeValueAsString(command));
      stdin.write('\n');
      stdin.flush();
    } catch (IOException e) {
      throw died("could not send '" + command.get("cmd") + "'");
    }
    String line = replies.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (line == null) {
      throw new MxException(
          name
              + " (pid "
              + process.pid()
              + ") did not answer '"
              + command.get("cmd")
              + "' within "
              + timeout.toSeconds()
              + " s"
              + logTail());
    }
    if (line.equals(EOF)) {
      replies.offer(EOF);
      throw died("while running '" + command.get("cmd") + "'");
    }
    Map<String, Object> reply = JSON.readValue(line, Map.class);
    if (!Boolean.TRUE.equals(reply.get("ok"))) {
      throw new MxException(name + ": " + reply.get("error"));
    }
    Object result = reply.get("result");
    return result == null ? Map.of() : (Map<String, Object>) result;
  }

  private MxException died(String when) throws InterruptedException {
    process.waitFor(5, TimeUnit.SECONDS);
    String code = process.isAlive() ? "is unresponsive" : "exited with code " + process.exitValue();
    return new MxException(name + " (pid " + process.pid() + ") " + code + " " + when + logTail());
  }

  /**
   * The line every JVM that loads the incubating Vector API (casts, digests) prints first. It is
   * expected and says nothing about the run, so a child's log is quoted without it.
   */
  static final String INCUBATOR_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector";

  /** {@code lines} without {@link #INCUBATOR_NOTICE}. */
  static List<String> withoutIncubatorNotice(List<String> lines) {
    List<String> out = new ArrayList<>(lines.size());
    for (String l : lines) {
      if (!l.equals(INCUBATOR_NOTICE)) {
        out.add(l);
      }
    }
    return out;
  }

  private String logTail() {
    try {
      List<String> lines = withoutIncubatorNotice(Files.readAllLines(log, StandardCharsets.UTF_8));
      lines.addAll(strayOutput);
      List<String> tail = lines.subList(Math.max(0, lines.size() - 3), lines.size());
      return tail.isEmpty() ? "" : "; its log ends: " + String.join(" | ", tail);
    } catch (IOException e) {
      return "";
    }
  }

  @Override
  public void kill() {
    process.destroyForcibly();
    try {
      // An event, not a clock: the kernel reaps a SIGKILLed process; the bound only covers one
      // stuck in uninterruptible sleep, which is then reported.
      if (!process.waitFor(CHILD_KILL_BOUND.toSeconds(), TimeUnit.SECONDS)) {
        System.err.println(
            "mx demo: "
                + name
                + " (pid "
                + process.pid()
                + ") is still there "
                + CHILD_KILL_BOUND.toSeconds()
                + " s after SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** How long a SIGKILLed child may take to be gone before that is reported. */
  private static final Duration CHILD_KILL_BOUND = Duration.ofSeconds(60);

  /**
   * Asks the child to exit with SIGTERM, resuming it first when stalled, and returns at once: its
   * shutdown hooks then mark its version slots STALE and delete its shared-memory files, which a
   * SIGKILL would leave behind.
   */
  void terminate() {
    process.destroy();
    if (stalled) {
      signal("CONT"); // a stopped process handles the SIGTERM only once resumed
      stalled = false;
    }
  }

  /**
   * Waits up to {@code grace} for the child to exit after {@link #terminate()}, then kills it.
   *
   * @return whether it exited by itself
   */
  boolean awaitExit(Duration grace) throws InterruptedException {
    if (process.waitFor(grace.toNanos(), TimeUnit.NANOSECONDS)) {
      return true;
    }
    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    return false;
  }

  @Override
  public void stall() {
    signal("STOP");
    stalled = true;
  }

  private void signal(String sig) {
    try {
      new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid()))
          .start()
          .waitFor(5, TimeUnit.SECONDS);
    } catch (IOException e) {
      throw new MxException("could not send SIG" + sig + " to " + name + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public boolean isAlive() {
    return process.isAlive();
  }

  @Override
  public void close() {
    if (verbose) {
      try {
        System.err.println("---- log of " + name + " (" + log + ")");
        System.err.println(
            String.join(
                "\n", withoutIncubatorNotice(Files.readAllLines(log, StandardCharsets.UTF_8))));
      } catch (IOException ignored) {
        // The log is optional.
      }
    }
    boolean wasStopped = stalled;
    if (stalled) {
      signal("CONT");
      stalled = false;
    }
    if (process.isAlive()) {
      try {
        stdin.write("{\"cmd\":\"exit\"}\n");
        stdin.flush();
        stdin.close();
      } catch (IOException ignored) {
        // Already gone.
      }
      try {
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
          process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
          // Say so: a killed worker cannot delete its shared-memory files (the run reclaims them).
          System.err.println(
              "mx demo: "
                  + name
                  + " (pid "
                  + process.pid()
                  + (wasStopped ? ", stopped by the fault until now" : "")
                  + ") did not exit within 10 s of being asked: killed it");
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
