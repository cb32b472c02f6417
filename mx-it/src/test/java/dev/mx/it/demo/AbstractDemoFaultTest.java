package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The demo's faults, which need ranks in separate processes, over one transport. With {@code
 * --install copy} each fails closed (the step fails naming the publisher, and every rank keeps the
 * previous weights) or, where the transport can still read the published bytes, installs only bytes
 * the digests judged right. In place (the default) a publisher killed or stopped before the reads
 * fails the step naming it with every live byte still the previous step's (dumps compared); a
 * corrupted shard found part-way is restored on every rank from the trainers' second buffer set.
 */
abstract class AbstractDemoFaultTest {

  /** The transport the demo runs over. */
  abstract String transport();

  /**
   * Whether a publisher stopped (SIGSTOP) after publishing fails the step: over ucx the reads need
   * the publisher's progress; one-sided shm reads do not, so there the step may verify and install.
   */
  abstract boolean aStalledPublisherAlwaysFailsTheStep();

  @BeforeEach
  void transportIsAvailable() {
    DemoMultiProcessTest.requireTransport(transport());
  }

  @AfterEach
  void noChildLeftBehind() throws InterruptedException {
    DemoRun.assertNoChildProcesses();
  }

  @Test
  void aKilledPublisherFailsTheStepNamingItAndKeepsThePreviousWeights(@TempDir Path dump)
      throws Exception {
    DemoRun r = tinyLlamaFault("copy", "kill-publisher", "1", dump);
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("trainer-0"), "names the dead publisher: " + r.err());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
    assertNoSharedMemoryLeftByTrainers(r);
  }

  /**
   * Fault catalogue IP05, IP06: the run gives back the shared memory of every trainer, those it
   * killed included (a killed process cannot delete its own files). The trainers' pids are read
   * from the run's memory table.
   */
  static void assertNoSharedMemoryLeftByTrainers(DemoRun r) throws java.io.IOException {
    java.util.List<String> pids = new java.util.ArrayList<>();
    java.util.regex.Matcher m =
        java.util.regex.Pattern.compile("(?m)^trainer \\d+\\s+(\\d+)\\s").matcher(r.out());
    while (m.find()) {
      pids.add(m.group(1));
    }
    assertTrue(pids.size() >= 2, "no trainer pids in the memory table: " + r.out());
    Path dir = Path.of(System.getenv().getOrDefault("MX_SHM_DIR", "/dev/shm"));
    java.util.List<String> left = new java.util.ArrayList<>();
    try (java.util.stream.Stream<Path> files = java.nio.file.Files.list(dir)) {
      files
          .map(f -> f.getFileName().toString())
          .filter(n -> pids.stream().anyMatch(pid -> n.matches("mx-shm-[^-]+-" + pid + "-.*")))
          .forEach(left::add);
    }
    assertEquals(java.util.List.of(), left, "files the trainers " + pids + " left in " + dir);
  }

  /**
   * A publisher stopped after it published, by copy and in place: over ucx the receivers' probe (or
   * a read) times out naming it, before anything is written, and every live byte is step 0's; over
   * shm the one-sided reads may still complete, and then every live byte is step 1's, verified.
   */
  @Test
  void aStalledPublisherFailsTheStepNamingItOrOnlyVerifiedBytesAreInstalled(@TempDir Path dumps)
      throws Exception {
    for (String install : List.of("copy", "in-place")) {
      Path dump = dumps.resolve(install);
      // One receiver that reads from both trainers (see the killed-publisher test below).
      DemoRun r = tinyLlamaFault(install, "stall-publisher", "1", "1", dump);
      if (r.code() == 0) {
        assertTrue(
            !aStalledPublisherAlwaysFailsTheStep(),
            "the step over " + transport() + " should have failed: " + r);
        DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 1, 1, "f32", "f32", 1);
        assertNoSharedMemoryLeftByTrainers(r);
        continue;
      }
      assertEquals(1, r.code(), r.toString());
      assertTrue((r.out() + r.err()).contains("trainer-0"), "names the stalled publisher: " + r);
      DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 1, 1, "f32", "f32", 0);
      assertNoSharedMemoryLeftByTrainers(r);
    }
  }

  @Test
  void aCorruptedByteIsCaughtAcrossProcesses(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--install",
            "copy",
            "--transport",
            transport(),
            "--model",
            "tiny-qwen3",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=1",
            "--steps",
            "2",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("digest mismatch") && r.err().contains("trainer-0"), r.err());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen3", 1, 1, "bf16", "bf16", 0);
    assertTrue(
        List.of(r.out().split("\n")).stream().anyMatch(l -> l.startsWith("result: FAILED")),
        r.out());
  }

  @Test
  void aReceiverExpectingAnotherTrainerTopologyFailsAtOnceAcrossProcesses() {
    DemoRun r =
        DemoRun.run(
            "--install",
            "copy",
            "--transport",
            transport(),
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=1",
            "--steps",
            "1",
            "--fault",
            "trainer-topology");
    assertEquals(1, r.code(), r.toString());
    String all = r.out() + r.err();
    assertTrue(
        all.contains("expects trainer topology tp=1,pp=1,ep=1 (1 rank)")
            && all.contains("declares tp=2,pp=1,ep=1 (2 ranks)"),
        all);
  }

  @Test
  void aCorruptedByteUnderInferenceTpAboveTrainerTpIsCaughtAcrossProcesses(@TempDir Path dump)
      throws Exception {
    // No receiver reads the trainer shard whole: the default stages it whole and verifies it before
    // copying.
    DemoRun r =
        DemoRun.run(
            "--install",
            "copy",
            "--transport",
            transport(),
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=1",
            "--inference",
            "tp=2",
            "--steps",
            "2",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue((r.out() + r.err()).contains("digest mismatch"), r.toString());
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 2, 1, "f32", "f32", 0);
  }

  @Test
  void inPlaceACorruptedStepIsRolledBackOnEveryRankFromTheTrainersOtherBufferSet(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--transport",
            transport(),
            "--model",
            "tiny-qwen3",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--trainer-buffers",
            "2",
            "--steps",
            "2",
            "--fault",
            "corrupt",
            "--dump",
            dump.toString());
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("digest mismatch") && r.err().contains("trainer-0"), r.err());
    // Every live byte of every rank is step 0's again: the failing rank restored itself, the other
    // rolled back from the trainers' set that still holds step 0.
    DemoRun.assertDumpMatchesGenerator(dump, "tiny-qwen3", 2, 1, "bf16", "bf16", 0);
  }

  /**
   * In place, with one trainer buffer set or two: the publisher killed after it published and
   * before the receivers read fails the step naming it; the receivers' probe of every peer runs
   * before any read lands in the live weights, so every live byte is still step 0's (a kill
   * part-way through the reads: {@code InPlacePublisherFaultTest}).
   */
  @Test
  void inPlaceAKilledPublisherFailsTheStepNamingItAndTouchesNoLiveByte(@TempDir Path dumps)
      throws Exception {
    for (String sets : List.of("1", "2")) {
      Path dump = dumps.resolve("sets-" + sets);
      // One receiver that reads from both trainers: with tp=2 on both sides, receiver 1 reads
      // nothing from trainer 0 (replicas are spread: its norms come from trainer 1) and installs.
      DemoRun r = tinyLlamaFault("in-place", "kill-publisher", sets, "1", dump);
      assertEquals(1, r.code(), r.toString());
      String all = r.out() + r.err();
      assertTrue(all.contains("trainer-0"), "names the dead publisher: " + all);
      assertTrue(all.contains("installed weights are still step 0"), all);
      DemoRun.assertDumpMatchesGenerator(dump, "tiny-llama", 1, 1, "f32", "f32", 0);
    }
  }

  /**
   * Two steps of tiny-llama, trainer tp=2 to inference tp=2, {@code fault} injected into the last,
   * with a 10 s stall limit (how long a stopped publisher is waited for; reads are bounded by it
   * too).
   */
  DemoRun tinyLlamaFault(String install, String fault, String trainerSets, Path dump) {
    return tinyLlamaFault(install, fault, trainerSets, "2", dump);
  }

  /** As above, into {@code inferenceTp} inference ranks. */
  DemoRun tinyLlamaFault(
      String install, String fault, String trainerSets, String inferenceTp, Path dump) {
    return DemoRun.run(
        "--install",
        install,
        "--transport",
        transport(),
        "--model",
        "tiny-llama",
        "--trainer",
        "tp=2",
        "--inference",
        "tp=" + inferenceTp,
        "--trainer-buffers",
        trainerSets,
        "--steps",
        "2",
        "--fault",
        fault,
        // A stopped publisher is noticed by liveness: 10 s without progress. An overall --timeout
        // would also cap the healthy waits, which on a loaded host outlast it (receivers gave up on
        // step 0 while the trainers still digested it).
        "--stall-limit",
        "10",
        "--dump",
        dump.toString());
  }
}
