package dev.mx.refit.embed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersionState;
import dev.mx.api.plan.CaptureResult;
import dev.mx.api.plan.OpSpec;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ParamSpec;
import dev.mx.metadata.Discovery;
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
 * Fan-out end to end over real mem transports and a real store: two trainer ranks publish tensors
 * {@code a} and {@code b} (2x4 f32 each, one each); inference group 0 (tp=2) installs them in place
 * as a fused parameter {@code ab} (4x2: a's then b's columns of its half) and serves what it
 * installed; group 1 (one rank, {@code ab} whole, 4x4) reads only from group 0. Step {@code s}
 * writes {@code a[i] = 100 s + i}, {@code b[i] = 100 s + 50 + i}.
 */
class FanOutRanksTest {
  private static final Duration WAIT = MemJob.WAIT;
  private static final Shape TENSOR = Shape.of(2, 4);
  private static final String GROUP0_TOPOLOGY = "test-engine tp=2";

  private final MemJob job = new MemJob("fanout");
  private final String model = job.model;
  private final String served = model + "/installed-group-0";
  private final MetadataStore store = job.store;
  private final ExecutorService pool = job.pool;
  private final MemorySegment[][] sets = new MemorySegment[2][2];

  @AfterEach
  void close() {
    job.close();
  }

  private List<TrainerRank> trainers() {
    List<TrainerRank> ranks = new ArrayList<>();
    for (int r = 0; r < 2; r++) {
      String name = r == 0 ? "a" : "b";
      TrainerRank.Builder b = job.trainer(r, true);
      for (int k = 0; k < 2; k++) {
        MemorySegment seg = job.arena.allocate(TENSOR.byteSize(4), 64);
        sets[r][k] = seg;
        b.bufferSet(p -> p.tensor(name, DType.F32, TENSOR, new long[] {0, 0}, TENSOR, seg));
      }
      ranks.add(job.own(b.start()));
    }
    return ranks;
  }

  private void publish(List<TrainerRank> trainers, long step) {
    for (int r = 0; r < 2; r++) {
      int rank = r;
      trainers
          .get(r)
          .publish(
              step,
              set -> {
                for (int j = 0; j < 8; j++) {
                  sets[rank][set].setAtIndex(
                      ValueLayout.JAVA_FLOAT, j, 100f * step + 50 * rank + j);
                }
              });
    }
  }

  /** {@code ab} holding columns [c0, c0 + cols) of a (rows 0-1) and of b (rows 2-3). */
  private static Capture fused(long c0, long cols) {
    Shape member = Shape.of(2, cols);
    long[] stride = {cols, 1};
    List<OpSpec> narrow = cols == 4 ? List.of() : List.of(OpSpec.narrow(1, c0, cols));
    return new Capture(
        CaptureResult.of(
            List.of(
                new RecordedCopy("a", narrow, "ab", 0, member, stride, DType.F32),
                new RecordedCopy("b", narrow, "ab", 2 * cols, member, stride, DType.F32))),
        Map.of("ab", new ParamSpec(Shape.of(4, cols), DType.F32)));
  }

  private LiveWeights live(long cols) {
    return job.own(new LiveWeights(Map.of("ab", new ParamSpec(Shape.of(4, cols), DType.F32))));
  }

  private InferenceRank group0(int rank, LiveWeights live) {
    Capture capture = fused(2L * rank, 2);
    InferenceRank r =
        InferenceRank.builder(job.mem(model + "-g0-" + rank), store, model)
            .rank(rank)
            .live(live)
            .geometry(m -> capture)
            .config(ReceiverConfig.defaults().withTimeout(WAIT))
            .expect(new Discovery.Expectation(2, "tp=2"))
            .followVersions(true)
            .inPlace(true)
            .trainerBufferSets(2)
            .serveInstalled(served, 2, GROUP0_TOPOLOGY)
            .build();
    return job.own(r);
  }

  private InferenceRank group1(LiveWeights live) {
    Capture capture = fused(0, 4);
    InferenceRank r =
        InferenceRank.builder(job.mem(model + "-g1-0"), store, served)
            .rank(0)
            .live(live)
            .geometry(m -> capture)
            .config(ReceiverConfig.defaults().withTimeout(WAIT))
            .expect(new Discovery.Expectation(2, GROUP0_TOPOLOGY))
            .followVersions(true)
            .inPlace(true)
            .trainerBufferSets(1)
            .build();
    return job.own(r);
  }

  private static float[] expected(long step, int c0, int cols) {
    float[] v = new float[4 * cols];
    for (int row = 0; row < 4; row++) {
      int tensor = row / 2;
      for (int c = 0; c < cols; c++) {
        v[row * cols + c] = 100f * step + 50 * tensor + (row % 2) * 4 + c0 + c;
      }
    }
    return v;
  }

  @Test
  void aSecondGroupReadsEachStepFromTheFirstGroupsInstalledWeightsOnly() throws Exception {
    List<TrainerRank> trainers = trainers();
    List<LiveWeights> lives0 = List.of(live(2), live(2));
    List<InferenceRank> g0 = List.of(group0(0, lives0.get(0)), group0(1, lives0.get(1)));
    LiveWeights live1 = live(4);
    InferenceRank g1 = group1(live1);
    StepCoordinator coordinator = new StepCoordinator(pool);
    coordinator.onAll(g0, InferenceRank::start);
    g1.start();
    for (long step = 0; step < 3; step++) {
      long s = step;
      publish(trainers, s);
      coordinator.onAll(g0, r -> r.step(s, WAIT));
      List<Map<String, Object>> commits = coordinator.commitAll(g0, s);
      assertTrue(((Number) commits.get(0).get("serve_s")).doubleValue() >= 0, commits.toString());
      assertEquals(
          WeightVersionState.READY,
          store.versions().version(served, "step-" + s).orElseThrow().state(),
          "both ranks of group 0 landed their slots of the installed step");
      Map<String, Object> m = g1.step(s, WAIT);
      assertEquals(s, ((Number) m.get("version_step")).longValue());
      coordinator.commitAll(List.of(g1), s);
      for (int r = 0; r < 2; r++) {
        assertArrayEquals(
            expected(s, 2 * r, 2), lives0.get(r).parameter("ab").toArray(ValueLayout.JAVA_FLOAT));
      }
      assertArrayEquals(
          expected(s, 0, 4),
          live1.parameter("ab").toArray(ValueLayout.JAVA_FLOAT),
          "group 1 holds step " + s + " read from group 0");
    }
    assertEquals(2, g0.get(0).installedPublisher().shards().size(), "a's and b's column slices");
  }

  @Test
  void installedWeightsBeingOverwrittenAreNoLongerOfferedAndATornRankServesNothing()
      throws Exception {
    List<TrainerRank> trainers = trainers();
    List<LiveWeights> lives0 = List.of(live(2), live(2));
    List<InferenceRank> g0 = List.of(group0(0, lives0.get(0)), group0(1, lives0.get(1)));
    StepCoordinator coordinator = new StepCoordinator(pool);
    coordinator.onAll(g0, InferenceRank::start);
    publish(trainers, 0);
    coordinator.onAll(g0, r -> r.step(0, WAIT));
    coordinator.commitAll(g0, 0);
    assertEquals(
        WeightVersionState.READY, store.versions().version(served, "step-0").orElseThrow().state());
    // Step 1 is written in place: before any byte of it, the served step 0 is released, so no
    // reader can lease weights that are being overwritten.
    publish(trainers, 1);
    coordinator.onAll(g0, r -> r.step(1, WAIT));
    assertNotEquals(
        WeightVersionState.READY,
        store.versions().version(served, "step-0").map(v -> v.state()).orElse(null));
    assertTrue(store.versions().version(served, "step-1").isEmpty(), "not committed: not served");
    // A rank whose weights tore serves nothing.
    lives0.get(1).torn(1, new IllegalStateException("test: a read failed part-way"));
    IllegalStateException e =
        assertThrows(
            IllegalStateException.class,
            () -> g0.get(1).installedPublisher().publish(1, fused(2, 2), List.of()));
    assertTrue(e.getMessage().contains("are torn (step 1"), e.getMessage());
  }

  @Test
  void aRankWhoseEngineTransformsWhatItInstallsCannotServe() {
    LiveWeights live = live(2);
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () ->
                InferenceRank.builder(job.mem(model + "-q"), store, model)
                    .rank(0)
                    .live(live)
                    .geometry(m -> fused(0, 2))
                    .expect(new Discovery.Expectation(2, "tp=2"))
                    .commitInstaller((step, buffers) -> {})
                    .serveInstalled(served, 2, GROUP0_TOPOLOGY)
                    .build());
    assertTrue(e.getMessage().contains("transforms what it installs"), e.getMessage());
  }
}
