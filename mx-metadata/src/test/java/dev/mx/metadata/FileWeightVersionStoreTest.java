package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.metadata.file.FileMetadataStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The version suite on a {@code file:} store, plus slot publications racing from two processes. */
class FileWeightVersionStoreTest extends AbstractWeightVersionStoreTest {
  @TempDir Path dir;

  @Override
  protected MetadataStore openStore() {
    return new FileMetadataStore(dir);
  }

  @Test
  void twoProcessesPublishingSlotsAtOnceTurnTheVersionReadyExactlyOnce() throws Exception {
    int perProcess = 6;
    List<String> all = IntStream.range(0, 2 * perProcess).mapToObj(Integer::toString).toList();
    versions.createVersion(model, "v", 9, all);
    List<String> mine = all.stream().filter(s -> Integer.parseInt(s) % 2 == 0).toList();
    List<String> theirs = all.stream().filter(s -> Integer.parseInt(s) % 2 == 1).toList();
    Path go = dir.resolve("go");
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child =
        new ProcessBuilder(
                java.toString(),
                "-cp",
                System.getProperty("java.class.path"),
                FileVersionPeer.class.getName(),
                dir.toString(),
                model,
                "v",
                "9",
                String.join(",", theirs),
                go.toString())
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    try {
      String ready = new String(child.getInputStream().readNBytes(6), StandardCharsets.UTF_8);
      assertEquals("READY\n", ready, "the child is waiting for the start signal");
      Files.createFile(go);
      int readyAnswers = 0;
      for (String s : mine) {
        WeightVersion v = versions.publishSlot(model, slot("v", s, "w" + s, 9));
        readyAnswers += v.state() == WeightVersionState.READY ? 1 : 0;
      }
      assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the child finishes");
      String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      assertEquals(0, child.exitValue(), out);
      assertTrue(out.startsWith("READY_ANSWERS "), out);
      readyAnswers += Integer.parseInt(out.substring("READY_ANSWERS ".length()));
      assertEquals(
          1, readyAnswers, "exactly one publication, in one of the two processes, saw READY");
      List<String> landed = new ArrayList<>();
      for (VersionSlot s : versions.slots(model, "v")) {
        landed.add(s.verified(model).slot());
      }
      assertEquals(all.stream().sorted().toList(), landed);
      assertTrue(versions.version(model, "v").orElseThrow().isReadable());
    } finally {
      child.destroyForcibly();
    }
  }

  @Test
  void junkEntriesAreSkippedWithOneWarningNamingTheirPathsAndTheOtherVersionsProceed()
      throws Exception {
    versions.createVersion(model, "step-1", 1, List.of("0"));
    versions.publishSlot(model, slot("step-1", "0", "w0", 1));
    versions.createVersion(model, "step-2", 2, List.of("0"));
    Path models = dir.resolve(".versions").resolve(StoreNames.encode(model));
    Path damaged = Files.createDirectory(models.resolve("step-9"));
    Files.writeString(damaged.resolve("version.json"), "{\"id\": \"step-9\", \"step\": tru");
    Path stray = Files.writeString(models.resolve("notes.txt"), "not a version");
    Path copy = Files.createDirectory(models.resolve("step-1.bak"));
    Files.copy(models.resolve("step-1").resolve("version.json"), copy.resolve("version.json"));
    Files.createDirectory(models.resolve("half-deleted")); // no document: silently not a version

    String log =
        stderrOf(
            () -> {
              for (int i = 0; i < 3; i++) {
                assertEquals(
                    List.of("step-1", "step-2"),
                    versions.versions(model).stream().map(WeightVersion::id).toList(),
                    "every real version is listed, once, past the junk");
              }
            });
    for (Path junk : List.of(damaged, stray, copy)) {
      assertEquals(
          1,
          log.lines().filter(l -> l.contains("WARN") && l.contains(junk.toString())).count(),
          "one warning naming " + junk + " in: " + log);
    }
    assertTrue(log.contains("is damaged"), log);
    assertTrue(log.contains("is not that version's folder"), log);
    assertFalse(log.contains("half-deleted"), log);

    // The versions proceed: a lease, a new slot, READY.
    versions.acquireLease(model, "step-1", "receiver", Duration.ofSeconds(5));
    assertEquals(
        WeightVersionState.READY,
        versions.publishSlot(model, slot("step-2", "0", "w0", 2)).state());
    // Where skipping is unsafe (the junk holds the id a trainer creates), the call fails naming it.
    MetadataStoreException e =
        assertThrows(
            MetadataStoreException.class,
            () -> versions.createVersion(model, "step-9", 9, List.of("0")));
    assertTrue(
        e.getMessage().contains(damaged.resolve("version.json").toString())
            && e.getMessage().contains("damaged"),
        e.getMessage());
  }

  /** What {@code body} wrote to stderr (where slf4j-simple logs), also passed through. */
  private static String stderrOf(Runnable body) {
    java.io.PrintStream original = System.err;
    java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
    System.setErr(new java.io.PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      body.run();
    } finally {
      System.setErr(original);
    }
    String text = captured.toString(StandardCharsets.UTF_8);
    original.print(text);
    return text;
  }
}
