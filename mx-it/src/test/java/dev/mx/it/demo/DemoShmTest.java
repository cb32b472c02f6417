package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mx demo} over shm with every rank in its own JVM, and the demo's faults over shm. */
class DemoShmTest extends AbstractDemoFaultTest {

  @Override
  String transport() {
    return "shm";
  }

  @Override
  boolean aStalledPublisherAlwaysFailsTheStep() {
    return false;
  }

  @Test
  void tensorParallelTrainersToInferenceOverShmInSeparateProcesses(@TempDir Path dump) throws Exception {
    DemoRun r = DemoRun.run("--transport", "shm", "--model", "tiny-llama", "--trainer", "tp=2", "--inference", "tp=2",
        "--steps", "2", "--dump", dump.toString(), "--json");
    assertEquals(0, r.code(), r.toString());
    assertEquals("shm", r.json().get("run").get("transport").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
  }
}
