package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportProvider;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo} with every rank in its own JVM over UCX (the faults that need separate processes
 * are in {@link DemoUcxFaultTest}). Skips, printing the cause, where UCX is unavailable (unless
 * {@code -Dmx.test.requireNative=true}).
 */
public class DemoMultiProcessTest {

  @BeforeAll
  static void requireUcx() {
    requireTransport("ucx");
  }

  /**
   * Skips (or fails under -Dmx.test.requireNative=true) when the named transport is unavailable,
   * printing why.
   */
  public static void requireTransport(String name) {
    TransportProvider ucx =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.name().equals(name))
            .findFirst()
            .orElse(null);
    String cause =
        ucx == null
            ? "no " + name + " transport on the class path"
            : ucx.isAvailable() ? null : String.valueOf(ucx.unavailabilityCause());
    if (cause != null && Boolean.getBoolean("mx.test.requireNative")) {
      throw new AssertionError(
          name + " is required (-Dmx.test.requireNative=true) but unavailable: " + cause);
    }
    if (cause != null) {
      System.err.println("SKIPPED: transport " + name + " unavailable: " + cause);
    }
    assumeTrue(cause == null, name + " unavailable: " + cause);
  }

  @AfterEach
  void noChildLeftBehind() throws InterruptedException {
    DemoRun.assertNoChildProcesses();
  }

  @Test
  void tensorParallelTrainersToInferenceOverUcxInSeparateProcesses(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--transport",
            "ucx",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            "--dump",
            dump.toString(),
            "--json");
    assertEquals(0, r.code(), r.toString());
    assertEquals("ucx", r.json().get("run").get("transport").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }

  @Test
  void moePipelineAndExpertParallelPhasedWithADtypeChange(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--transport",
            "ucx",
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=1,pp=2,ep=2",
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
}
