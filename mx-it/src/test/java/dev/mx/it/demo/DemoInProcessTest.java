package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mx demo --in-process}: every rank on a thread over the mem transport. */
class DemoInProcessTest {

  @Test
  void pipelineParallelTrainerToTensorParallelInferenceDumpsTheGeneratorsValues(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2,pp=2",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            "--dump",
            dump.toString());
    assertEquals(0, r.code(), r.toString());
    assertTrue(r.out().contains("result: ok, last installed step 1"), r.out());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }

  /**
   * A run whose only step fails installs nothing, so it dumps no weights (all zeros would pass for
   * weights): run.json alone, with {@code last_step} -1, and a line saying so.
   */
  @Test
  void aRunThatNeverInstalledDumpsNoWeights(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--steps",
            "1",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("no step was installed: no weights dumped to " + dump), r.err());
    try (var files = java.nio.file.Files.list(dump)) {
      assertEquals(
          List.of("run.json"), files.map(f -> f.getFileName().toString()).sorted().toList());
    }
    JsonNode run =
        new com.fasterxml.jackson.databind.ObjectMapper()
            .readTree(java.nio.file.Files.readString(dump.resolve("run.json")));
    assertEquals(-1, run.get("last_step").asLong(), run.toString());
  }

  @Test
  void moeWithExpertParallelismPhasedWireAndADtypeChange(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=2,ep=2",
            "--inference",
            "tp=2,ep=2",
            "--wire",
            "phased",
            "--trainer-dtype",
            "f32",
            "--inference-dtype",
            "bf16",
            "--steps",
            "2",
            "--dump",
            dump.toString());
    assertEquals(0, r.code(), r.toString());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen3-moe", 2, 2, "f32", "bf16", 1);
  }

  @Test
  void fsdpTrainerWithStrictVerification(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-qwen2",
            "--trainer",
            "fsdp=3",
            "--inference",
            "tp=2",
            "--verify",
            "strict",
            "--steps",
            "1",
            "--dump",
            dump.toString(),
            "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    for (JsonNode step : doc.get("steps")) {
      assertEquals(
          0, step.get("unverifiable_shards").asLong(), "strict verifies every shard: " + step);
      assertTrue(step.get("verified_shards").asLong() > 0, step.toString());
    }
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen2", 2, 1, "bf16", "bf16", 0);
  }

  /**
   * With two trainer buffer sets and copy installs, the trainers may write step N+1 while the
   * receivers refit step N (the default): the run says so, every step reports its period, the
   * receivers still install exactly every step; {@code --no-overlap} starts each step after the
   * last commit.
   */
  @Test
  void overlappedStepsReportTheirPeriodAndInstallExactly(@TempDir Path dump) throws Exception {
    for (boolean overlap : new boolean[] {true, false}) {
      Path out = dump.resolve(overlap ? "overlap" : "sequential");
      DemoRun r =
          DemoRun.run(
              "--in-process",
              "--model",
              "tiny-llama",
              "--trainer",
              "tp=2",
              "--inference",
              "tp=1",
              "--install",
              "copy",
              "--trainer-buffers",
              "2",
              overlap ? "--overlap" : "--no-overlap",
              "--steps",
              "3",
              "--dump",
              out.toString(),
              "--json");
      assertEquals(0, r.code(), r.toString());
      JsonNode doc = r.json();
      assertEquals(overlap, doc.get("run").get("overlap").asBoolean(), doc.get("run").toString());
      assertEquals(3, doc.get("steps").size());
      for (JsonNode s : doc.get("steps")) {
        assertTrue(s.get("period_s").asDouble() > 0, "a step period: " + s);
        assertTrue(s.get("publish_overlapped").isBoolean(), s.toString());
        if (!overlap || s.get("step").asInt() == 0) {
          assertFalse(s.get("publish_overlapped").asBoolean(), s.toString());
        }
      }
      DemoRun.assertDumpMatchesGenerator(out, "tiny-llama", 1, 1, "f32", "f32", 2);
    }
  }

  @Test
  void jsonCarriesTheReportFields() throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-qwen3",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=4",
            "--steps",
            "2",
            "--json");
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertTrue(doc.get("ok").asBoolean());
    assertTrue(doc.get("error").isNull());
    assertTrue(doc.get("baseline_gbps").asDouble() > 0);
    JsonNode run = doc.get("run");
    for (String key :
        List.of(
            "model",
            "trainer",
            "inference",
            "steps",
            "last_step",
            "trainer_dtype",
            "inference_dtype",
            "transport",
            "wire")) {
      assertTrue(run.has(key), "run has " + key + ": " + run);
    }
    assertEquals("mem", run.get("transport").asText());
    assertEquals(1, run.get("last_step").asLong());
    assertEquals(0, doc.get("unverified_bytes").asLong());
    assertEquals(2 * 4, doc.get("steps").size(), "one entry per step and receiver rank");
    for (JsonNode s : doc.get("steps")) {
      for (String key :
          List.of(
              "step",
              "rank",
              "bytes",
              "descriptors",
              "full_pulls",
              "converts",
              "wire_s",
              "gbps",
              "ratio_to_copy",
              "e2e_s",
              "verified_shards",
              "unverifiable_shards",
              "coverage",
              "unverified_bytes",
              "sources_exact",
              "sources_staged",
              "sources_full_pull",
              "staged_shards")) {
        assertTrue(s.has(key), "step entry has " + key + ": " + s);
      }
      assertTrue(s.get("bytes").asLong() > 0, s.toString());
      assertEquals(
          0, s.get("unverified_bytes").asLong(), "the default verifies every installed byte: " + s);
      assertEquals(1.0, s.get("coverage").asDouble(), 1e-9, s.toString());
    }
  }

  @Test
  void aCorruptedPublisherByteFailsTheLastStepAndKeepsThePreviousWeights(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            // In place, the previous weights are restored from the trainers' second buffer set.
            "--trainer-buffers",
            "2",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("digest mismatch") && r.err().contains("trainer-0"), r.err());
    assertTrue(r.err().contains("model."), "names the tensor: " + r.err());
    assertFalse(r.out().contains("result: ok"), r.out());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
  }

  @Test
  void aReceiverExpectingAnotherTrainerTopologyFailsAtOnceNamingBoth() {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=4",
            "--inference",
            "tp=2",
            "--steps",
            "1",
            "--fault",
            "trainer-topology");
    assertEquals(1, r.code(), r.toString());
    String all = r.out() + r.err();
    assertTrue(all.contains("expects trainer topology tp=2,pp=1,ep=1 (2 ranks)"), all);
    assertTrue(all.contains("declares tp=4,pp=1,ep=1 (4 ranks)"), all);
    assertFalse(r.out().contains("result: ok"), r.out());
  }

  @Test
  void aCorruptedByteUnderInferenceTpAboveTrainerTpIsCaughtInTheDefaultMode(@TempDir Path dump)
      throws Exception {
    // Trainer TP 2 -> inference TP 4: no receiver reads a trainer shard whole, yet the corrupt byte
    // is caught.
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=4",
            "--steps",
            "2",
            // In place, the previous weights are restored from the trainers' second buffer set.
            "--trainer-buffers",
            "2",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(
        (r.out() + r.err()).contains("digest mismatch")
            && (r.out() + r.err()).contains("trainer-0"),
        r.toString());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 4, 1, "f32", "f32", 0);
  }

  @Test
  void badUsageExitsTwo() {
    assertEquals(2, DemoRun.run("--in-process", "--wire", "sideways").code());
    assertEquals(
        2,
        DemoRun.run("--in-process", "--fault", "kill-publisher").code(),
        "needs separate processes");
    assertEquals(2, DemoRun.run("--trainer", "tp=2,fsdp=2").code());
  }
}
