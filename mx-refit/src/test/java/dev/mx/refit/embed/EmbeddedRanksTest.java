package dev.mx.refit.embed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.metadata.Discovery;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The embedding ranks end to end over real mem transports and a real store: two {@link
 * TrainerRank}s (tensor {@code w}, 4x4 f32, split by rows, two buffer sets each) publish weight
 * versions; an {@link InferenceRank} follows them, writing its live weights in place, and the
 * {@link StepCoordinator} commits or rolls back. Step {@code s} writes {@code w[i] = 100 s + i}.
 */
class EmbeddedRanksTest {
  private static final Duration WAIT = MemJob.WAIT;
  private static final Shape GLOBAL = Shape.of(4, 4);
  private static final Discovery.Expectation JOB = new Discovery.Expectation(2, "tp=2");

  private final MemJob job = new MemJob("embed");
  private final String model = job.model;
  private final MetadataStore store = job.store;
  private final ExecutorService pool = job.pool;
  private final MemorySegment[][] sets = new MemorySegment[2][2];

  @AfterEach
  void close() {
    job.close();
  }

  private List<TrainerRank> trainers(boolean versions) {
    List<TrainerRank> ranks = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      int rank = r;
      TrainerRank.Builder b = job.trainer(r, versions);
      for (int k = 0; k < 2; k++) {
        MemorySegment seg = job.arena.allocate(8 * 4, 64);
        sets[r][k] = seg;
        b.bufferSet(
            p -> p.tensor("w", DType.F32, GLOBAL, new long[] {2L * rank, 0}, Shape.of(2, 4), seg));
      }
      ranks.add(job.own(b.start()));
    }
    return ranks;
  }

  private static WeightVersion publish(List<TrainerRank> trainers, long step, MemorySegment[][] s) {
    WeightVersion last = null;
    for (int r = 0; r < trainers.size(); r++) {
      int rank = r;
      last =
          trainers
              .get(r)
              .publish(
                  step,
                  set -> {
                    for (int j = 0; j < 8; j++) {
                      s[rank][set].setAtIndex(
                          ValueLayout.JAVA_FLOAT, j, 100f * step + 8 * rank + j);
                    }
                  });
    }
    return last;
  }

  private InferenceRank inference(LiveWeights live) {
    RecordedCopy whole =
        new RecordedCopy("w", List.of(), "w", 0, GLOBAL, new long[] {4, 1}, DType.F32);
    Capture capture =
        new Capture(
            CaptureResult.of(List.of(whole)), Map.of("w", new ParamSpec(GLOBAL, DType.F32)));
    InferenceRank rank =
        InferenceRank.builder(job.mem("recv-" + model), store, model)
            .rank(0)
            .live(live)
            .geometry(m -> capture)
            .config(ReceiverConfig.defaults().withTimeout(Duration.ofSeconds(10)))
            .expect(JOB)
            .followVersions(true)
            .inPlace(true)
            .trainerBufferSets(2)
            .build();
    return job.own(rank);
  }

  private LiveWeights live() {
    return job.own(new LiveWeights(Map.of("w", new ParamSpec(GLOBAL, DType.F32))));
  }

  private static float[] expected(long step) {
    float[] v = new float[16];
    for (int i = 0; i < 16; i++) {
      v[i] = 100f * step + i;
    }
    return v;
  }

  @Test
  void everyStepGoesLiveInPlaceAndIsCommittedOnceEveryRankVerifiedIt() throws Exception {
    List<TrainerRank> trainers = trainers(true);
    LiveWeights live = live();
    InferenceRank rank = inference(live);
    assertEquals("in-place", rank.start().get("install"));
    StepCoordinator coordinator = new StepCoordinator(pool);
    for (long step = 0; step < 3; step++) {
      assertEquals("READY", publish(trainers, step, sets).state().name());
      Map<String, Object> m = rank.step(step, WAIT);
      assertEquals(step, ((Number) m.get("version_step")).longValue());
      assertTrue(((Number) m.get("e2e_s")).doubleValue() >= 0, m.toString());
      List<Map<String, Object>> commits = coordinator.commitAll(List.of(rank), step);
      assertEquals(step, ((Number) commits.get(0).get("step")).longValue());
      assertArrayEquals(expected(step), live.parameter("w").toArray(ValueLayout.JAVA_FLOAT));
    }
  }

  @Test
  void aStepAnotherRankFailedIsRolledBackToTheLastCommittedOne() throws Exception {
    List<TrainerRank> trainers = trainers(true);
    LiveWeights live = live();
    InferenceRank rank = inference(live);
    rank.start();
    StepCoordinator coordinator = new StepCoordinator(pool);
    publish(trainers, 0, sets);
    rank.step(0, WAIT);
    coordinator.commitAll(List.of(rank), 0);
    publish(trainers, 1, sets);
    rank.step(1, WAIT);
    assertArrayEquals(expected(1), live.parameter("w").toArray(ValueLayout.JAVA_FLOAT));
    // Another rank failed step 1: this one, which wrote it in place, goes back to step 0.
    List<String> notes = new ArrayList<>();
    List<Map<String, Object>> states = StepCoordinator.rollBackAll(List.of(rank), 0, notes::add);
    assertEquals(List.of(Map.of("rank", 0, "state", "whole", "step", 0L)), states);
    assertEquals(List.of("receiver 0: back on step 0"), notes);
    assertArrayEquals(expected(0), live.parameter("w").toArray(ValueLayout.JAVA_FLOAT));
  }

  @Test
  void consistentDiscoveryFindsThePlainPublishersOfTheExpectedJobAndTheirStep() {
    List<TrainerRank> trainers = trainers(false);
    assertNull(publish(trainers, 7, sets), "plain publishers have no versions");
    DiscoveredSources found =
        StoreDiscovery.consistent(store, model, JOB).named("receiver 0").discover(WAIT);
    assertEquals(7L, found.step());
    assertEquals(List.of("w"), List.copyOf(found.sources().keySet()));
    assertEquals(2, found.peerMetadata().size());
  }
}
