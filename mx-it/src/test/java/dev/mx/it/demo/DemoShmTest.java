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

  /**
   * Fault catalogue "not exercised": a trainer killed half-way through a receiver's reads into its
   * live weights (bytes of step 1 already landed) fails the step naming it, and with two trainer
   * buffer sets every live byte is restored to step 0 from the dead trainer's mapped memory.
   */
  @Test
  void inPlaceATrainerKilledHalfWayThroughTheReadsIsRestoredToThePreviousStep(@TempDir Path dump)
      throws Exception {
    DemoRun r = tinyLlamaFault("in-place", "kill-publisher-mid-read", "2", dump);
    assertEquals(1, r.code(), r.toString());
    String all = r.out() + r.err();
    assertTrue(all.contains("armed in receiver 0"), all);
    assertTrue(all.matches("(?s).*trainer-[01].*"), "names the dead publisher: " + all);
    // Part-way: the kill came after bytes of step 1 had landed in the live weights.
    assertTrue(all.contains("failed after it began writing the live weights"), all);
    assertTrue(all.contains("the live weights were restored to step 0, verified"), all);
    assertTrue(all.contains("installed weights are still step 0"), all);
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
    assertNoSharedMemoryLeftByTrainers(r);
  }

  @Test
  void tensorParallelTrainersToInferenceOverShmInSeparateProcesses(@TempDir Path dump)
      throws Exception {
    DemoRun r;
    // Another job on the host allocates and frees memory all the while: the report counts only the
    // run's own processes, so it cannot make the figure 0 or double it.
    try (MemoryHog hog = MemoryHog.start()) {
      r =
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
      hog.requireRan();
    }
    assertEquals(0, r.code(), r.toString());
    assertEquals("shm", r.json().get("run").get("transport").asText());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 1);
    assertTrainerMemoryIsMapped(r);
    assertMemoryIsReported(r, 2, 2);
  }

  /**
   * The report's memory: every process's peak resident set and PSS, the peak of their summed PSS,
   * and the weights it is measured against (what the ranks installed in one step).
   */
  static void assertMemoryIsReported(DemoRun r, int trainers, int receivers) throws Exception {
    JsonNode m = r.json().get("memory");
    assertTrue(m != null && m.isObject(), "no memory in " + r.json());
    long weights = 0;
    long firstStep = r.json().get("steps").get(0).get("step").asLong();
    for (JsonNode s : r.json().get("steps")) {
      if (s.get("step").asLong() == firstStep) {
        weights += s.get("bytes").asLong();
      }
    }
    assertEquals(weights, m.get("weight_bytes").asLong(), m.toString());
    long peak = m.get("peak_pss_bytes").asLong();
    assertEquals((double) peak / weights, m.get("peak_per_weight").asDouble(), 1e-9, m.toString());
    java.util.Set<String> names = new java.util.TreeSet<>();
    long sumOfPeakRss = 0;
    for (JsonNode p : m.get("processes")) {
      names.add(p.get("name").asText());
      assertTrue(p.get("peak_rss_bytes").asLong() > 0, p.toString());
      assertTrue(p.get("peak_pss_bytes").asLong() > 0, p.toString());
      assertTrue(
          p.get("peak_pss_bytes").asLong() <= p.get("peak_rss_bytes").asLong(), p.toString());
      sumOfPeakRss += p.get("peak_rss_bytes").asLong();
    }
    // The run's processes hold the weights at least once (the receivers' live copy), and a sum
    // of proportional sizes can never exceed the sum of their resident peaks: a host-wide figure
    // broke either bound whenever another job freed or took memory.
    assertTrue(peak >= weights, "peak PSS " + peak + " below the weights " + weights + ": " + m);
    assertTrue(peak <= sumOfPeakRss, "peak PSS " + peak + " above the summed peak RSS: " + m);
    java.util.Set<String> expected = new java.util.TreeSet<>(java.util.List.of("orchestrator"));
    for (int i = 0; i < trainers; i++) {
      expected.add("trainer " + i);
    }
    for (int i = 0; i < receivers; i++) {
      expected.add("receiver " + i);
    }
    assertEquals(expected, names, m.toString());
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
