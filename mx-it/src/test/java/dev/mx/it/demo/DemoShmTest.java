package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
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
  void tensorParallelTrainersToInferenceOverShmInSeparateProcesses(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--transport",
            "shm",
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
    assertEquals("shm", r.json().get("run").get("transport").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
    assertTrainerMemoryIsMapped(r);
  }

  /**
   * The trainers' buffers come from the shm transport's allocate, so every byte a receiver read
   * came from a mapping of the trainers' shared memory, none through process_vm_readv (the slow
   * path for registered memory).
   */
  static void assertTrainerMemoryIsMapped(DemoRun r) throws Exception {
    JsonNode steps = r.json().get("steps");
    assertTrue(steps.size() > 0, r.toString());
    for (JsonNode s : steps) {
      assertTrue(
          s.has("shm_mapped_bytes") && s.has("shm_attached_bytes"),
          "no shm counters in step row " + s);
      assertEquals(
          0,
          s.get("shm_attached_bytes").asLong(),
          "bytes read from registered (unmapped) memory: " + s);
      // Cumulative counter: at least this step's bytes were copied from mappings.
      assertTrue(
          s.get("shm_mapped_bytes").asLong() >= s.get("bytes").asLong()
              && s.get("bytes").asLong() > 0,
          "receiver did not read the trainers' memory from mappings: " + s);
    }
  }
}
