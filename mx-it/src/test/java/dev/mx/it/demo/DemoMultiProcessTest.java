package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportProvider;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo} with every rank in its own JVM over UCX, and the faults that need separate processes.
 * Skips, printing the cause, where UCX is unavailable (unless {@code -Dmx.test.requireNative=true}).
 */
class DemoMultiProcessTest {

  @BeforeAll
  static void requireUcx() {
    TransportProvider ucx = TransportProvider.registry().providers().stream()
        .filter(p -> p.name().equals("ucx")).findFirst().orElse(null);
    String cause = ucx == null ? "no ucx transport on the class path"
        : ucx.isAvailable() ? null : String.valueOf(ucx.unavailabilityCause());
    if (cause != null && Boolean.getBoolean("mx.test.requireNative")) {
      throw new AssertionError("UCX is required (-Dmx.test.requireNative=true) but unavailable: " + cause);
    }
    if (cause != null) {
      System.err.println("SKIPPED DemoMultiProcessTest: UCX unavailable: " + cause);
    }
    assumeTrue(cause == null, "UCX unavailable: " + cause);
  }

  @AfterEach
  void noChildLeftBehind() throws InterruptedException {
    DemoRun.assertNoChildProcesses();
  }

  @Test
  void tensorParallelTrainersToInferenceOverUcxInSeparateProcesses(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-llama", "--trainer", "tp=2", "--inference", "tp=2",
        "--steps", "2", "--dump", dump.toString(), "--json");
    assertEquals(0, r.code(), r.toString());
    assertEquals("ucx", r.json().get("run").get("transport").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }

  @Test
  void moePipelineAndExpertParallelPhasedWithADtypeChange(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-qwen3-moe", "--trainer", "tp=1,pp=2,ep=2",
        "--inference", "tp=2,ep=2", "--wire", "phased", "--trainer-dtype", "f32", "--inference-dtype", "bf16",
        "--steps", "2", "--dump", dump.toString());
    assertEquals(0, r.code(), r.toString());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen3-moe", 2, 2, "f32", "bf16", 1);
  }

  @Test
  void aKilledPublisherFailsTheStepNamingItAndKeepsThePreviousWeights(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-llama", "--trainer", "tp=2", "--inference", "tp=2",
        "--steps", "2", "--fault", "kill-publisher", "--timeout", "20", "--dump", dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("trainer-0"), "names the dead publisher: " + r.err());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
  }

  @Test
  void aStalledPublisherFailsTheStepNamingIt(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-llama", "--trainer", "tp=2", "--inference", "tp=2",
        "--steps", "2", "--fault", "stall-publisher", "--timeout", "10", "--dump", dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("trainer-0"), "names the stalled publisher: " + r.err());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
  }

  @Test
  void aCorruptedByteIsCaughtAcrossProcesses(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-qwen3", "--trainer", "tp=2", "--inference", "tp=1",
        "--steps", "2", "--fault", "corrupt", "--dump", dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("digest mismatch") && r.err().contains("trainer-0"), r.err());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen3", 1, 1, "bf16", "bf16", 0);
    assertTrue(List.of(r.out().split("\n")).stream().anyMatch(l -> l.startsWith("result: FAILED")), r.out());
  }

  @Test
  void aReceiverExpectingAnotherTrainerTopologyFailsAtOnceAcrossProcesses() {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-llama", "--trainer", "tp=2", "--inference", "tp=1",
        "--steps", "1", "--fault", "trainer-topology");
    assertEquals(1, r.code(), r.toString());
    String all = r.out() + r.err();
    assertTrue(all.contains("expects trainer topology tp=1,pp=1,ep=1 (1 rank)") && all.contains("declares tp=2,pp=1,ep=1 (2 ranks)"),
        all);
  }

  @Test
  void aCorruptedByteUnderInferenceTpAboveTrainerTpIsCaughtAcrossProcesses(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "ucx", "--model", "tiny-llama", "--trainer", "tp=1", "--inference", "tp=2",
        "--steps", "2", "--fault", "corrupt", "--dump", dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue((r.out() + r.err()).contains("digest mismatch"), r.toString());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
  }
}
