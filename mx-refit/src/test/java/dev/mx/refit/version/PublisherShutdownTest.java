package dev.mx.refit.version;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.SlotStatus;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionStore;
import dev.mx.metadata.file.FileMetadataStore;
import dev.mx.testing.Signals;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SIGTERM and SIGINT on a real publisher process, sent with {@code kill}: its shutdown hook marks
 * every slot it holds STALE, and each buffer set's shard-table state, before the JVM exits, every
 * time (4 SIGTERMs and a SIGINT, each a fresh JVM).
 */
class PublisherShutdownTest {
  @TempDir Path dir;

  @Test
  void aSignalledPublisherMarksItsSlotsStaleBeforeItsJvmExitsEveryTime() throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    // A JVM started with SIGINT ignored (a background job of a non-interactive shell, as under
    // nohup) keeps
    // it ignored and installs no handler; children inherit that, so the SIGINT try only means
    // something here
    // when this JVM does not ignore SIGINT.
    boolean intIgnored = Signals.isIgnored(Signals.SIGINT);
    if (intIgnored) {
      System.out.println(
          "SIGINT is ignored by this test JVM (inherited), so its children cannot receive it:"
              + " sending SIGTERM in its place");
    }
    List<String> signals = List.of("TERM", "TERM", "TERM", "TERM", intIgnored ? "TERM" : "INT");
    List<Process> children = new ArrayList<>();
    try (FileMetadataStore store = new FileMetadataStore(dir)) {
      WeightVersionStore versions = store.versions();
      for (int i = 0; i < signals.size(); i++) {
        children.add(
            new ProcessBuilder(
                    java.toString(),
                    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                    "-cp",
                    System.getProperty("java.class.path"),
                    ShutdownChild.class.getName(),
                    dir.toString(),
                    "model-" + i)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start());
      }
      for (int i = 0; i < children.size(); i++) {
        BufferedReader out =
            new BufferedReader(
                new InputStreamReader(children.get(i).getInputStream(), StandardCharsets.UTF_8));
        assertEquals("PUBLISHED", out.readLine(), "child " + i + " published");
        for (WeightVersion v : versions.versions("model-" + i)) {
          assertEquals(
              Map.of("0", SlotStatus.READY), v.slots(), "before the signal: " + v.describe());
        }
        assertEquals(
            List.of(SourceStatus.READY, SourceStatus.READY),
            tableStates(store, "model-" + i),
            "before the signal, both buffer sets' shard tables are READY");
      }
      for (int i = 0; i < children.size(); i++) {
        Process child = children.get(i);
        long sent = System.nanoTime();
        Process kill =
            new ProcessBuilder("kill", "-" + signals.get(i), Long.toString(child.pid()))
                .inheritIO()
                .start();
        assertEquals(0, kill.waitFor(), "kill -" + signals.get(i));
        assertTrue(
            child.waitFor(30, TimeUnit.SECONDS), "child " + i + " exits on SIG" + signals.get(i));
        long exitedMs = (System.nanoTime() - sent) / 1_000_000;
        assertEquals(
            signals.get(i).equals("TERM") ? 143 : 130,
            child.exitValue(),
            "exit status after SIG" + signals.get(i));
        List<WeightVersion> held = versions.versions("model-" + i);
        assertEquals(List.of("step-0", "step-1"), held.stream().map(WeightVersion::id).toList());
        for (WeightVersion v : held) {
          assertEquals(
              Map.of("0", SlotStatus.STALE),
              v.slots(),
              "marked before the JVM exited: " + v.describe());
          assertTrue(!v.isReadable());
        }
        assertEquals(
            List.of(SourceStatus.STALE, SourceStatus.STALE),
            tableStates(store, "model-" + i),
            "each buffer set's shard-table state was marked STALE before the JVM exited too");
        System.out.println(
            "SIG"
                + signals.get(i)
                + " try "
                + (i + 1)
                + ": slots STALE, JVM gone "
                + exitedMs
                + " ms after the signal");
      }
    } finally {
      children.forEach(Process::destroyForcibly);
    }
  }

  /** The status of each buffer set's shard-table record (the {@code .state} file) of the child. */
  private static List<SourceStatus> tableStates(FileMetadataStore store, String model) {
    List<SourceStatus> out = new ArrayList<>();
    for (int set = 0; set < 2; set++) {
      String identity = model + "#buffer-set-" + set;
      String worker = "child-trainer/set-" + set;
      out.add(
          store
              .get(identity, worker)
              .orElseThrow(() -> new AssertionError("no record of " + worker + " in " + identity))
              .status());
    }
    return out;
  }
}
