package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.testing.Eventually;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx publish} says what it is doing while it allocates, writes, digests and publishes
 * (minutes on a large model), on stderr, before its "published" line on stdout.
 */
class PublishProgressTest {
  @TempDir Path dir;

  @Test
  void publishShowsEachPhaseOnStderrBeforeServing() throws Exception {
    Path store = Files.createDirectories(dir.resolve("store"));
    Process p =
        CliProcess.start(
            dir, "publish", "--rank", "0", "--model", "tiny-llama", "--metadata", "file:" + store);
    try {
      String published;
      try (BufferedReader out =
          new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        published = out.readLine();
      }
      assertTrue(
          published != null && published.startsWith("published trainer rank 0"),
          "stdout: " + published);
      Path stderr = dir.resolve("stderr.txt");
      Eventually.await(
          Eventually.PROCESS_START,
          "the 'published' phase on stderr",
          () -> read(stderr).contains("mx publish: rank 0: step 0 published"));
      String err = read(stderr);
      int alloc = err.indexOf("mx publish: rank 0: allocating and registering buffers");
      int write = err.indexOf("mx publish: rank 0: writing, digesting and publishing step 0 (");
      int done = err.indexOf("mx publish: rank 0: step 0 published (written in ");
      assertTrue(alloc >= 0 && write > alloc && done > write, err);
    } finally {
      p.destroy();
      p.waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (java.io.IOException e) {
      return "";
    }
  }
}
