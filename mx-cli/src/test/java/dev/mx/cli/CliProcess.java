package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs {@code dev.mx.cli.Main} in a fresh JVM on the test class path, as {@code ./mx} would. */
final class CliProcess {

  /** What one run printed and returned; {@code err} without the JVM's own WARNING lines. */
  record Run(int code, String out, String err) {
    List<String> outLines() {
      return out.lines().toList();
    }
  }

  private CliProcess() {}

  /** Starts {@code mx args...} in {@code dir}, stderr to {@code dir/stderr.txt}. */
  static Process start(Path dir, String... args) throws IOException {
    return start(dir, List.of(), args);
  }

  /**
   * Starts {@code mx args...} with extra JVM options in {@code dir}, stderr to {@code
   * dir/stderr.txt}.
   */
  static Process start(Path dir, List<String> jvmArgs, String... args) throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED",
                "--add-modules",
                "jdk.incubator.vector"));
    command.addAll(jvmArgs);
    command.addAll(
        List.of(
            "-cp",
            System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
            Main.class.getName()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command)
        .directory(dir.toFile())
        .redirectError(dir.resolve("stderr.txt").toFile())
        .start();
  }

  /**
   * The launcher contract for bad usage (ARCHITECTURE §5.1): exit 2, one line on stderr starting
   * with {@code command: error: }, holding {@code message} and ending with "try --help", and
   * nothing on stdout.
   */
  static void assertBadUsage(Run r, String command, String message) {
    assertEquals(2, r.code(), r.err());
    List<String> lines = r.err().lines().toList();
    assertEquals(1, lines.size(), "one line, got:\n" + r.err());
    assertTrue(lines.get(0).startsWith(command + ": error: "), lines.get(0));
    assertTrue(lines.get(0).contains(message), lines.get(0));
    assertTrue(lines.get(0).endsWith("(try '" + command + " --help')"), lines.get(0));
    assertEquals("", r.out());
  }

  /** {@link Main#execute} in this JVM with stdout and stderr captured. */
  static synchronized Run inProcess(String... args) {
    PrintStream oldOut = System.out;
    PrintStream oldErr = System.err;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try {
      System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      int code = Main.execute(args);
      return new Run(
          code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(oldOut);
      System.setErr(oldErr);
    }
  }

  /** Runs {@code mx args...} with {@code stdin} as standard input (null: none) and waits for it. */
  static Run run(Path dir, byte[] stdin, String... args) throws IOException, InterruptedException {
    Process p = start(dir, args);
    try (OutputStream in = p.getOutputStream()) {
      if (stdin != null) {
        in.write(stdin);
      }
    }
    return finish(dir, p, args);
  }

  /** Waits for a started process and collects what it printed. */
  static Run finish(Path dir, Process p, String... args) throws IOException, InterruptedException {
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(
        p.waitFor(120, TimeUnit.SECONDS), "mx " + String.join(" ", args) + " did not finish");
    String err =
        Files.readString(dir.resolve("stderr.txt"))
            .lines()
            .filter(l -> !l.startsWith("WARNING:"))
            .reduce("", (a, b) -> a + b + "\n");
    return new Run(p.exitValue(), out, err);
  }
}
