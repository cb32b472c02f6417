package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.VersionSlot;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.metadata.file.FileMetadataStore;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
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
}
