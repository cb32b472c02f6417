package dev.mx.cli;

import dev.mx.api.util.Settings;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine;

/**
 * The failure half of the exit-code contract (ARCHITECTURE §5.1): a command that fails prints one
 * line on stderr, {@code mx CMD: error: WHAT (caused by: WHY)}, and exits 1; under {@code --json}
 * the same error is also {@code {"ok": false, "error": ...}} on stdout. A stack trace is for
 * developers: it is printed only when {@code MX_LOG_LEVEL} (or {@code mx.log-level}) is {@code
 * debug} or {@code trace}, so an environment fault (a server that is missing, exits or is killed)
 * is never answered with one.
 */
final class Failures {
  static final String LOG_LEVEL_PROPERTY = "mx.log-level";
  static final String LOG_LEVEL_ENV = "MX_LOG_LEVEL";

  private Failures() {}

  /** Reports {@code failure} of {@code cmd} and returns the exit code, 1. */
  static int report(Exception failure, CommandLine cmd, boolean json) {
    return report(failure, cmd, json, Settings.system());
  }

  static int report(Exception failure, CommandLine cmd, boolean json, Settings settings) {
    String message =
        expected(failure) && failure.getMessage() != null
            ? failure.getMessage()
            : describe(failure);
    PrintWriter err = cmd.getErr();
    err.println("mx " + cmd.getCommandName() + ": error: " + message);
    String level =
        settings.string(LOG_LEVEL_PROPERTY, LOG_LEVEL_ENV, "warn").toLowerCase(Locale.ROOT);
    if (level.equals("debug") || level.equals("trace")) {
      failure.printStackTrace(err);
    }
    err.flush();
    if (json) {
      printJson(cmd, message);
    }
    return 1;
  }

  /**
   * {@code {"ok": false, "error": message}} on {@code cmd}'s stdout when the command takes {@code
   * --json}: a failure under {@code --json} is still a JSON document (usage errors too).
   */
  static void printJson(CommandLine cmd, String message) {
    if (cmd.getCommandSpec().findOption("--json") != null) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("ok", false);
      doc.put("error", message);
      Json.print(cmd.getOut(), doc);
    }
  }

  /** Failures whose own message already says what failed and why (the contract's one line). */
  private static boolean expected(Throwable failure) {
    return failure instanceof dev.mx.api.error.MxException
        || failure instanceof IllegalArgumentException
        || failure instanceof java.io.IOException
        || failure instanceof java.io.UncheckedIOException;
  }

  /**
   * One line: the failure's message, then each cause's that adds something. A failure without a
   * message (a bug, say) is named by its type, so the line is never empty.
   */
  static String describe(Throwable failure) {
    List<String> parts = new ArrayList<>();
    parts.add(messageOf(failure) != null ? messageOf(failure) : failure.getClass().getName());
    for (Throwable t = failure.getCause(); t != null && parts.size() < 4; t = t.getCause()) {
      String m = messageOf(t);
      // A cause adds something only when it has a message the line does not hold yet.
      if (m != null && parts.stream().noneMatch(p -> p.contains(m))) {
        parts.add(m);
      }
    }
    if (parts.size() == 1) {
      return parts.getFirst();
    }
    return parts.getFirst()
        + " (caused by: "
        + String.join("; ", parts.subList(1, parts.size()))
        + ")";
  }

  /** {@code t}'s message on one line, or null when it has none. */
  private static String messageOf(Throwable t) {
    String m = t.getMessage();
    return m == null || m.isBlank() ? null : oneLine(m);
  }

  private static String oneLine(String message) {
    return message.strip().replaceAll("\\s*\\R\\s*", " ");
  }
}
