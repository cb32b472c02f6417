package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.cli.bench.ScaleSpec;
import dev.mx.testing.RedisExtension;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The pieces of {@code mx bench scale} at a size a test affords: the tiny DeepSeek model's control
 * plane run through a real Redis at two rank counts, and the topology checks that make bad input
 * exit 2 naming the dimension.
 */
class ScaleBenchTest {
  @RegisterExtension static final RedisExtension REDIS = new RedisExtension();

  private static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

  /** 16 trainer ranks (tp=2 × ep=8) → 8 inference ranks (tp=2 × 4 data-parallel groups, ep=8). */
  private static final ScaleSpec TINY =
      new ScaleSpec(
          "tiny-deepseek", "tp=2,pp=1,ep=8", "tp=2,ep=8", 2, 400, List.of(2), ScaleSpec.REDIS);

  @Test
  void everyParticipantRunsTheRealProtocolAndReceiverCommandsDoNotGrowWithRanks() throws Exception {
    ScaleScenario full = ScaleScenario.of(TINY);
    ScaleScenario half = full.scaled(2).orElseThrow();
    assertEquals(8, half.trainerRanks());
    assertEquals(4, half.inferenceRanks());
    List<byte[]> halfTables = new ArrayList<>();
    List<byte[]> fullTables = new ArrayList<>();
    ScaleControlPlane.Result small;
    ScaleControlPlane.Result large;
    try (RedisControlPlane redis = new RedisControlPlane(REDIS.uri(), null);
        ScaleControlPlane plane = new ScaleControlPlane(redis)) {
      small = plane.run(half, half.publishedTensors(), 2, true, halfTables, QUIET);
      large = plane.run(full, full.publishedTensors(), 2, false, fullTables, QUIET);
      plane.close(); // idempotent with the try's close
    }
    assertEquals(ScaleControlPlane.PHASES, List.copyOf(large.phases().keySet()));
    assertEquals(16, large.phases().get("publish").participants);
    assertEquals(16, large.phases().get("reclaim").participants);
    assertEquals(8, large.phases().get("fetch").participants);
    assertEquals(16, fullTables.size());
    assertEquals(8, halfTables.size());
    // Every receiver read every table: its fetch moved at least all of them, and little else.
    long tableBytes = fullTables.stream().mapToLong(t -> t.length).sum();
    double fetched = large.phases().get("fetch").bytesPerParticipant();
    assertTrue(
        fetched >= tableBytes && fetched < tableBytes * 1.05 + 4096,
        fetched + " bytes fetched per receiver for " + tableBytes + " bytes of tables");
    for (String phase : List.of("discover", "lease", "fetch", "release")) {
      double a = small.phases().get(phase).commandsPerParticipant();
      double b = large.phases().get(phase).commandsPerParticipant();
      assertTrue(a > 0, phase + " ran no Redis command");
      assertEquals(a, b, phase + ": Redis commands per receiver at 8 vs 16 trainer ranks");
    }
    assertTrue(large.stepWallMs() > 0);
  }

  /**
   * Issue 36 over {@code mx://}: the central RefitService carries shard records, not tables (a
   * receiver's fetch moves far fewer bytes through it than the tables it reads from the trainers),
   * and a receiver's calls to it do not grow with the trainer ranks.
   */
  @Test
  void overMxTheCentralServiceCarriesRecordsWhileEachTrainerServesItsTable() throws Exception {
    ScaleScenario full = ScaleScenario.of(TINY);
    ScaleScenario half = full.scaled(2).orElseThrow();
    List<byte[]> halfTables = new ArrayList<>();
    List<byte[]> fullTables = new ArrayList<>();
    ScaleControlPlane.Result small;
    ScaleControlPlane.Result large;
    double serving;
    try (RefitServiceControlPlane mx = new RefitServiceControlPlane();
        ScaleControlPlane plane = new ScaleControlPlane(mx)) {
      small = plane.run(half, half.publishedTensors(), 1, true, halfTables, QUIET);
      large = plane.run(full, full.publishedTensors(), 1, true, fullTables, QUIET);
      ScaleControlPlane.Alone alone = plane.alone(full, full.publishedTensors(), 1);
      assertTrue(alone.publishMs() > 0 && alone.discoverMs() > 0, alone.toString());
      assertTrue(alone.leaseMs() > 0 && alone.fetchMs() > 0, alone.toString());
      serving = mx.fetchServingMs(0, fullTables.getFirst(), full.inferenceRanks());
    }
    assertEquals(16, fullTables.size());
    assertEquals(8, large.phases().get("fetch").participants);
    long tableBytes = fullTables.stream().mapToLong(t -> t.length).sum();
    double central = large.phases().get("fetch").bytesPerParticipant();
    assertTrue(
        central > 0 && central < tableBytes / 10.0,
        central
            + " bytes through the central service per receiver for "
            + tableBytes
            + " bytes of tables");
    for (String phase : List.of("discover", "lease", "fetch", "release")) {
      double a = small.phases().get(phase).commandsPerParticipant();
      double b = large.phases().get(phase).commandsPerParticipant();
      assertTrue(a > 0, phase + " made no call to the central service");
      assertTrue(large.phases().get(phase).serverMs() > 0, phase + ": no handler CPU time");
      assertEquals(a, b, phase + ": central calls per receiver at 8 vs 16 trainer ranks");
    }
    assertTrue(serving > 0, "one trainer serving its table to every receiver took no time");
  }

  @Test
  void theDefaultIsKimiK2From256To128RanksAndItsFractionsDivideTheModel() {
    ScaleScenario s = ScaleScenario.of(ScaleSpec.DEFAULT);
    assertEquals(256, s.trainerRanks());
    assertEquals(128, s.inferenceRanks());
    assertEquals("kimi-k2", s.model().modelName());
    for (int d : ScaleSpec.DEFAULT.fractions()) {
      ScaleScenario f = s.scaled(d).orElseThrow();
      assertEquals(256 / d, f.trainerRanks());
      assertEquals(128 / d, f.inferenceRanks());
    }
    // 1/32 would leave 4 inference ranks, fewer than one tp=8 attention group.
    assertTrue(s.scaled(32).isEmpty());
  }

  @Test
  void aTopologyThatDoesNotDivideTheModelNamesTheDimension() {
    assertMessage(
        "tp=1,pp=4,ep=64", "tp=8,ep=128", "num_hidden_layers 61 is not divisible by pp 4");
    assertMessage("tp=2,ep=128", "tp=8,ep=256", "num_experts 384 is not divisible by ep 256");
    assertMessage(
        "tp=128,ep=2", "tp=8,ep=128", "num_attention_heads 64 is not divisible by tp 128");
    assertMessage(
        "tp=2,ep=128", "tp=128,ep=128", "num_attention_heads 64 is not divisible by tp 128");
    assertMessage("fsdp=256", "tp=8,ep=128", "simulates Megatron");
  }

  private static void assertMessage(String trainer, String inference, String part) {
    var e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                ScaleScenario.of(
                    new ScaleSpec(
                        "kimi-k2", trainer, inference, 1, 400, List.of(), ScaleSpec.REDIS)));
    assertTrue(e.getMessage().contains(part), e.getMessage());
  }

  /** BS15: a failure after the bench's own redis-server was killed names the server and its end. */
  @org.junit.jupiter.api.Test
  void aCommandFailingAfterTheServerWasKilledNamesTheServer() throws Exception {
    try (dev.mx.testing.RedisServer redis = dev.mx.testing.RedisServer.start()) {
      RuntimeException timeout = new RuntimeException("Command timed out after 1 minute(s)");
      org.junit.jupiter.api.Assertions.assertSame(
          timeout, RedisControlPlane.serverGone(redis, timeout));
      redis.kill();
      RuntimeException named = RedisControlPlane.serverGone(redis, timeout);
      org.junit.jupiter.api.Assertions.assertEquals(
          "the bench's redis-server on port "
              + redis.port()
              + " was killed by signal 9 mid-run; the control-plane measurement stopped there",
          named.getMessage());
      org.junit.jupiter.api.Assertions.assertSame(timeout, named.getCause());
    }
  }

  @Test
  void fanOutKeepsTheTrainersAtOneEnginesBytesAndChainsTheReadersWires() {
    // Kimi-K2's modelled figures: receivers 0.414 s, trainers 0.224 s, 11.19 GB per trainer rank.
    ScaleBench.FanOutProjection two = ScaleBench.FanOutProjection.of(2, 0.414, 0.224, 11.19e9);
    assertEquals(0.448, two.directWireS(), 1e-9, "two engines at once: the trainers bound it");
    assertEquals(22.38e9, two.directTrainerBytes(), 1);
    assertEquals(0.828, two.chainWireS(), 1e-9, "engine 1 reads engine 0 after it installed");
    assertEquals(11.19e9, two.chainTrainerBytes(), 1);
    ScaleBench.FanOutProjection eight = ScaleBench.FanOutProjection.of(8, 0.414, 0.224, 11.19e9);
    assertEquals(8 * 0.224, eight.directWireS(), 1e-9);
    assertEquals(8 * 0.414, eight.chainWireS(), 1e-9);
    assertEquals(4 * 0.414, eight.doublingWireS(), 1e-9, "then 3 doubling rounds: 2, 4, 8");
    assertEquals(0.828, two.doublingWireS(), 1e-9, "two engines: one round, as the chain");
    assertEquals(
        0.414 + 2 * 0.414,
        ScaleBench.FanOutProjection.of(3, 0.414, 0.224, 11.19e9).doublingWireS(),
        1e-9,
        "three engines: 1 from 0, then 2 from 0");
    assertEquals(11.19e9, eight.chainTrainerBytes(), 1, "the trainers serve one engine");
  }

  @Test
  void theFp8ProjectionCountsEachQuantizedParameterAtOneByteAndItsScales() throws Exception {
    ScaleScenario full = ScaleScenario.of(TINY);
    List<byte[]> tables = new ArrayList<>();
    try (RedisControlPlane redis = new RedisControlPlane(REDIS.uri(), null);
        ScaleControlPlane plane = new ScaleControlPlane(redis)) {
      plane.run(full, full.publishedTensors(), 1, false, tables, QUIET);
    }
    ScaleBench.Planning p = ScaleBench.plan(full, tables, QUIET);
    for (int r = 0; r < full.inferenceRanks(); r++) {
      dev.mx.layout.vllm.VllmLayout layout =
          new dev.mx.layout.vllm.VllmLayout(full.model(), full.inference(), r, full.dtype());
      // The plan writes every element of a parameter once: its bf16 bytes, half of them in fp8.
      long quantized =
          dev.mx.layout.vllm.Fp8BlockLayout.defaults(layout, 128, true).scales().keySet().stream()
              .mapToLong(n -> layout.params().get(n).byteSize())
              .sum();
      assertTrue(quantized > 0, "rank " + r + " holds quantized parameters");
      long extra = p.fp8Bytes()[r] - (p.bytes()[r] - quantized / 2);
      // Plus 4 bytes of scale per 128 x 128 block of one-byte codes, rounded down per segment.
      assertTrue(
          extra >= 0 && extra <= quantized / 2 / (128 * 128) * 4,
          "rank " + r + ": " + extra + " bytes beyond the codes for " + quantized);
    }
    assertTrue(p.maxFp8TrainerBytes() < p.maxTrainerBytes());
    assertTrue(p.maxFp8Bytes() < p.maxBytes());
    // The receiver's per-step work besides the fetch was timed.
    assertTrue(p.mergeSeconds() > 0 && p.warmCheckSeconds() > 0, p.toString());
  }

  @Test
  void kimiK2PipelinedWithWholeExpertsHas256RanksAndHalves() {
    ScaleScenario s =
        ScaleScenario.of(
            new ScaleSpec(
                "kimi-k2",
                "tp=8,pp=8,ep=32,etp=1,pp-last=5",
                "tp=8,ep=128",
                1,
                400,
                List.of(2, 8),
                ScaleSpec.MX));
    assertEquals(256, s.trainerRanks());
    assertEquals(128, s.scaled(2).orElseThrow().trainerRanks());
    // An eighth leaves 4 ranks per stage, fewer than one TP 8 group of the dense weights.
    assertTrue(s.scaled(8).isEmpty());
  }
}
