package dev.mx.it.demo;

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
 * {@code --source checkpoint:DIR}: receivers install a checkpoint written by {@code mx checkpoint}
 * when they start (resharded, cast and verified), then follow the trainers; the dumps equal the
 * generator's values of the step installed last, and a checkpoint that does not fit the model fails
 * naming its file and tensor.
 */
class DemoCheckpointTest {

  private static void writeCheckpoint(Path dir, String model, long step, String dtype) {
    DemoRun w =
        DemoRun.command(
            "checkpoint",
            "--model",
            model,
            "--step",
            Long.toString(step),
            "--dtype",
            dtype,
            "--files",
            "2",
            "--out",
            dir.toString());
    assertEquals(0, w.code(), w.toString());
    assertTrue(w.out().contains("in 2 file(s)"), w.out());
  }

  /**
   * {@code mx demo} of {@code model}, trainer and inference tp=2, from {@code ckpt}, {@code steps}
   * live steps; {@code extra} after those.
   */
  private static DemoRun fromCheckpoint(String model, Path ckpt, int steps, String... extra) {
    List<String> a =
        new ArrayList<>(
            List.of(
                "--model",
                model,
                "--trainer",
                "tp=2",
                "--inference",
                "tp=2",
                "--source",
                "checkpoint:" + ckpt,
                "--steps",
                Integer.toString(steps)));
    a.addAll(List.of(extra));
    return DemoRun.run(a.toArray(String[]::new));
  }

  @Test
  void aCheckpointAloneInstallsItsStepExactlyCastToTheEngineDtype(
      @TempDir Path ckpt, @TempDir Path dump) throws Exception {
    // bf16 on disk, f32 in the engine: every element is the bf16-rounded generator value.
    writeCheckpoint(ckpt, "tiny-llama", 3, "bf16");
    DemoRun r =
        fromCheckpoint("tiny-llama", ckpt, 0, "--in-process", "--dump", dump.toString(), "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(2, doc.get("checkpoint").size(), doc.toString());
    long read = 0;
    for (JsonNode c : doc.get("checkpoint")) {
      assertEquals(3, c.get("step").asLong(), c.toString());
      assertEquals(2, c.get("files").asInt(), c.toString());
      assertTrue(c.get("verified_shards").asLong() > 0, c.toString());
      read += c.get("bytes_read").asLong();
    }
    JsonNode kinds = doc.get("bytes_served_per_source_kind");
    assertEquals(read, kinds.get("checkpoint").asLong(), kinds.toString());
    assertEquals(0, kinds.get("trainer").asLong(), kinds.toString());
    assertEquals(0, doc.get("unverified_bytes").asLong());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "bf16", "f32", 3);
    // The digests were computed once and cached beside both files.
    assertTrue(
        Files.isRegularFile(ckpt.resolve("model-00001-of-00002.safetensors.mx-digests.json")));
    assertTrue(
        Files.isRegularFile(ckpt.resolve("model-00002-of-00002.safetensors.mx-digests.json")));
  }

  @Test
  void childReceiversStartFromACheckpointThenInstallLiveStepsExactly(
      @TempDir Path ckpt, @TempDir Path dump) throws Exception {
    writeCheckpoint(ckpt, "tiny-llama", 0, "f32");
    DemoRun r = fromCheckpoint("tiny-llama", ckpt, 2, "--dump", dump.toString(), "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(2, doc.get("checkpoint").size(), doc.toString());
    assertEquals(4, doc.get("steps").size(), doc.toString());
    assertTrue(doc.get("bytes_served_per_source_kind").get("trainer").asLong() > 0);
    assertEquals("checkpoint:" + ckpt.toAbsolutePath(), doc.get("run").get("source").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }

  @Test
  void aCheckpointOfAnotherModelFailsNamingTheFileAndTensor(@TempDir Path ckpt) {
    writeCheckpoint(ckpt, "tiny-llama", 0, "f32");
    DemoRun r = fromCheckpoint("tiny-qwen2", ckpt, 1, "--in-process");
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("checkpoint " + ckpt) && r.err().contains("tensor '"), r.err());
  }

  @Test
  void badSourcesAreRefusedBeforeAnythingStarts(@TempDir Path ckpt) {
    DemoRun.assertRefused("--source must be checkpoint:DIR", "--source", "trainer");
    DemoRun.assertRefused(
        "is not a directory", "--source", "checkpoint:" + ckpt.resolve("missing"));
    DemoRun.assertRefused(
        "--trainer-dtype fp8-block",
        "--source",
        "checkpoint:" + ckpt,
        "--trainer-dtype",
        "fp8-block");
    DemoRun.assertRefused("--steps", "--steps", "0");
  }
}
