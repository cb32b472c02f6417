package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo --changed PCT}: the dump of a delta run equals, byte for byte, the dump of the
 * same run with {@code --no-delta}, on the bundled dense and MoE models, in place (one and two
 * trainer buffer sets) and by copy; the delta run moves fewer bytes and says how many tensors it
 * kept.
 */
class DemoDeltaTest {

  @Test
  void tinyLlamaInPlaceDeltaDumpEqualsTheFullPullDump(@TempDir Path dir) throws Exception {
    compare(dir, "tiny-llama", "--install", "in-place", "--trainer-buffers", "1");
  }

  @Test
  void tinyLlamaInPlaceFromTwoTrainerBufferSets(@TempDir Path dir) throws Exception {
    compare(dir, "tiny-llama", "--install", "in-place", "--trainer-buffers", "2");
  }

  @Test
  void tinyQwen3MoeByCopyFromTwoTrainerBufferSets(@TempDir Path dir) throws Exception {
    compare(
        dir,
        "tiny-qwen3-moe",
        "--install",
        "copy",
        "--trainer-buffers",
        "2",
        "--inference",
        "tp=2,ep=2");
  }

  /**
   * Expert parallel: some sources are full-pulled and re-sliced every step; the receivers of the
   * two trainer buffer sets share what the live weights hold, so those are always read again.
   */
  @Test
  void tinyQwen3MoeInPlaceExpertParallelFromTwoTrainerBufferSets(@TempDir Path dir)
      throws Exception {
    compare(
        dir,
        "tiny-qwen3-moe",
        "--install",
        "in-place",
        "--trainer-buffers",
        "2",
        "--inference",
        "tp=2,ep=2");
  }

  @Test
  void tinyQwen3MoeInPlace(@TempDir Path dir) throws Exception {
    compare(dir, "tiny-qwen3-moe", "--install", "in-place", "--trainer-buffers", "1");
  }

  @Test
  void changedOutsideZeroToHundredExitsTwoNamingTheOptionAndValue() {
    for (String bad : List.of("101", "-1")) {
      DemoRun run = DemoRun.run("--model", "tiny-llama", "--in-process", "--changed", bad);
      assertEquals(2, run.code(), run.toString());
      assertTrue(
          run.err().contains("--changed " + bad + " is out of range: must be from 0 to 100"),
          run.err());
    }
  }

  private static void compare(Path dir, String model, String... extra) throws Exception {
    Path delta = dir.resolve("delta");
    Path full = dir.resolve("full");
    JsonNode d = run(delta, model, extra, false);
    JsonNode f = run(full, model, extra, true);
    for (String file : List.of("receiver-0.safetensors", "receiver-1.safetensors")) {
      assertArrayEquals(
          Files.readAllBytes(full.resolve(file)),
          Files.readAllBytes(delta.resolve(file)),
          model + " " + String.join(" ", extra) + ": " + file);
    }
    long deltaBytes = 0;
    long fullBytes = 0;
    long kept = 0;
    for (int i = 0; i < d.get("steps").size(); i++) {
      JsonNode ds = d.get("steps").get(i);
      JsonNode fs = f.get("steps").get(i);
      if (ds.get("step").asLong() > 0) {
        deltaBytes += ds.get("bytes").asLong();
        fullBytes += fs.get("bytes").asLong();
        kept += ds.get("tensors_skipped").asLong();
        assertEquals(0, fs.get("tensors_skipped").asLong(), "--no-delta keeps nothing");
      }
    }
    assertTrue(kept > 0, "the delta run kept tensors: " + d);
    assertTrue(
        deltaBytes < fullBytes / 2,
        "with --changed 10 the delta run moves " + deltaBytes + " bytes vs " + fullBytes);
  }

  private static JsonNode run(Path dump, String model, String[] extra, boolean noDelta)
      throws Exception {
    List<String> args =
        new ArrayList<>(
            List.of(
                "--model",
                model,
                "--in-process",
                "--trainer",
                "tp=2",
                "--steps",
                "4",
                "--changed",
                "10",
                "--json",
                "--dump",
                dump.toString()));
    args.addAll(List.of(extra));
    if (noDelta) {
      args.add("--no-delta");
    }
    DemoRun run = DemoRun.run(args.toArray(String[]::new));
    assertEquals(0, run.code(), run.toString());
    return run.json();
  }
}
