package dev.mx.cli.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs a {@link Worker} in a child JVM, driven by JSON lines on stdin; replies are JSON lines on
 * stdout (logs go to stderr). The child exits when stdin closes, so it can never outlive its
 * orchestrator.
 */
public final class WorkerHost {
  private static final Logger LOG = LoggerFactory.getLogger(WorkerHost.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Marks protocol replies: native libraries (UCX logs to stdout) may write to the same file
   * descriptor, so the parent ignores any line without it.
   */
  static final String REPLY_PREFIX = "@mx ";

  private WorkerHost() {}

  /** Serves commands until {@code exit} or end of input; returns the process exit code. */
  public static int serve(Worker worker) {
    PrintStream out =
        new PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    // Anything else that prints to System.out must not corrupt the protocol.
    System.setOut(System.err);
    try (worker;
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isBlank()) {
          continue;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> cmd = JSON.readValue(line, Map.class);
        String op = String.valueOf(cmd.get("cmd"));
        Map<String, Object> reply = new LinkedHashMap<>();
        try {
          Map<String, Object> result = Worker.run(worker, cmd);
          if (result == null) {
            out.println(REPLY_PREFIX + JSON.writeValueAsString(Map.of("ok", true)));
            return 0;
          }
          reply.put("ok", true);
          reply.put("result", result);
        } catch (Exception e) {
          LOG.warn("{} failed", op, e);
          reply.put("ok", false);
          reply.put("error", e.getMessage() == null ? e.toString() : e.getMessage());
          reply.put("type", e.getClass().getSimpleName());
        }
        out.println(REPLY_PREFIX + JSON.writeValueAsString(reply));
      }
      return 0;
    } catch (Exception e) {
      LOG.error("worker failed", e);
      return 1;
    }
  }
}
