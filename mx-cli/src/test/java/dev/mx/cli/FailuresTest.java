package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.util.Settings;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Fault catalogue BS01, BS02, BS15: an environment fault (a server missing, exiting at once, killed
 * mid-run) is one line naming it, never a stack trace; under {@code --json} also a JSON document.
 */
class FailuresTest {
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private CommandLine bench() {
    CommandLine root = new CommandLine(new Main());
    CommandLine bench = root.getSubcommands().get("bench");
    bench.setOut(new PrintWriter(out, true));
    bench.setErr(new PrintWriter(err, true));
    return bench;
  }

  @Test
  void anUnexpectedFailureIsOneLineWithItsCausesAndNoStackTrace() {
    Exception failure =
        new IllegalStateException(
            "redis-server on port 6399 exited with 1",
            new RuntimeException("Address already in use"));
    assertEquals(1, Failures.report(failure, bench(), false, Settings.of(Map.of(), Map.of())));
    assertEquals(
        "mx bench: error: redis-server on port 6399 exited with 1 (caused by: Address already in"
            + " use)\n",
        err.toString());
    assertEquals("", out.toString());
  }

  @Test
  void underJsonTheErrorIsAlsoADocumentOnStdout() throws Exception {
    Failures.report(
        new IllegalStateException("cannot start redis-server: not installed"),
        bench(),
        true,
        Settings.of(Map.of(), Map.of()));
    var doc = Json.mapper().readTree(out.toString());
    assertEquals(false, doc.get("ok").asBoolean());
    assertEquals("cannot start redis-server: not installed", doc.get("error").asText());
  }

  @Test
  void aStackTraceOnlyWhenTheLogLevelAsksForIt() {
    Failures.report(
        new NullPointerException(),
        bench(),
        false,
        Settings.of(Map.of(), Map.of("MX_LOG_LEVEL", "debug")));
    assertTrue(
        err.toString().startsWith("mx bench: error: java.lang.NullPointerException\n"),
        err.toString());
    assertTrue(err.toString().contains("\tat "), err.toString());
  }

  @Test
  void expectedFailuresKeepTheirOwnMessage() {
    Failures.report(
        new IllegalArgumentException("--x: bad", new RuntimeException("inner")),
        bench(),
        false,
        Settings.of(Map.of(), Map.of()));
    assertEquals("mx bench: error: --x: bad\n", err.toString());
  }
}
