package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.error.TornInstallException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.stage.StagingWaves;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * In-place refits over real trainer memory (tiny-llama, mem transport): the receiver writes the
 * engine's {@link LiveWeights} themselves with only a bounded staging budget beside them, in waves
 * when the staged shards do not fit at once, and every live byte equals the generator's reference.
 * A budget that cannot hold the largest staged unit fails at prepare naming it; a step that fails
 * after it began writing is reported torn, and the next step repairs every byte.
 */
class InPlaceRefitTest {
  private static final ModelArchitecture MODEL = ModelConfigs.load("tiny-llama");

  /** A receiver rank over a trainer cluster writing {@code live} in place. */
  private record Rig(TrainerCluster trainers, Transport transport, LiveWeights live, Receiver r)
      implements AutoCloseable {
    @Override
    public void close() {
      r.close();
      live.close();
      transport.close();
      trainers.close();
    }
  }

  private static Rig rig(
      TrainerTopology trainer, InferenceTopology inference, int rank, long stagingBytes) {
    return rig(trainer, inference, rank, stagingBytes, 0);
  }

  /** As {@link #rig}, with {@code setAside} bytes of staging in the live weights' slab. */
  private static Rig rig(
      TrainerTopology trainer,
      InferenceTopology inference,
      int rank,
      long stagingBytes,
      long setAside) {
    CpuDigestProvider digests = new CpuDigestProvider();
    TrainerCluster trainers = new TrainerCluster(trainer.layout(MODEL, DType.BF16));
    Transport t = new MemTransportProvider().create(TransportConfig.of("receiver-" + rank));
    VllmLayout geometry = new VllmLayout(MODEL, inference, rank, DType.BF16);
    LiveWeights live = new LiveWeights(geometry.params(), null, setAside);
    live.registerWith(t);
    Receiver.Builder b =
        Receiver.builder()
            .config(ReceiverConfig.defaults().withRank(rank).withThreads(2))
            .transport(t)
            .discovery(
                timeout ->
                    new DiscoveredSources(trainers.sources(digests), trainers.peerMetadata()))
            .rediscoverEachStep(true)
            .geometry(geometry)
            .inPlace(live)
            .installer(live)
            .digests(digests);
    if (stagingBytes > 0) {
      b.stagingBytes(stagingBytes);
    }
    return new Rig(trainers, t, live, b.build());
  }

  /**
   * Staging the engine set aside with its live weights (registered with them) is what the receiver
   * stages its shards through: it allocates that much less native memory of its own than without,
   * and every live byte still matches.
   */
  @Test
  void stagingSetAsideWithTheLiveWeightsServesTheReceiversStagedShards() {
    InferenceTopology tp2 = InferenceTopology.tp(2);
    long setAside = 16L << 20;
    long own = -1;
    for (long reserve : new long[] {0, setAside}) {
      try (Rig g = rig(new TrainerTopology.Megatron(1, 1, 1), tp2, 1, setAside, reserve)) {
        assertEquals(reserve, g.live().staging().byteSize());
        for (long step = 0; step < 2; step++) {
          g.trainers().fill(step);
          Map<String, Object> m = g.r().updateWeights(step);
          assertTrue(((Number) m.get("staged_shards")).longValue() > 0, m.toString());
          assertEquals(0L, m.get("unverified_bytes"), m.toString());
          assertEquals(List.of(), mismatches(g.live(), tp2, 1, step));
        }
        if (reserve == 0) {
          own = g.r().nativeBytes();
        } else {
          assertTrue(
              g.r().nativeBytes() < own,
              "own native memory "
                  + g.r().nativeBytes()
                  + " with staging set aside, "
                  + own
                  + " without");
        }
      }
    }
  }

  private static List<String> mismatches(
      LiveWeights live, InferenceTopology inference, int rank, long step) {
    VllmReference reference = new VllmReference(MODEL, inference, rank);
    List<String> out = new ArrayList<>();
    for (String name : live.layout().keySet()) {
      out.addAll(reference.mismatches(name, live.parameter(name), step, DType.BF16, DType.BF16, 5));
    }
    return out;
  }

  @Test
  void trainerTpFourToInferenceTpTwoInstallsEveryLiveByteInPlace() {
    InferenceTopology tp2 = InferenceTopology.tp(2);
    for (int rank = 0; rank < 2; rank++) {
      try (Rig g = rig(new TrainerTopology.Megatron(4, 1, 1), tp2, rank, 0)) {
        for (long step = 0; step < 2; step++) {
          g.trainers().fill(step);
          Map<String, Object> m = g.r().updateWeights(step);
          assertEquals(0L, m.get("unverified_bytes"), m.toString());
          assertEquals(List.of(), mismatches(g.live(), tp2, rank, step), "rank " + rank);
          assertEquals(step, g.live().lastStep());
          assertFalse(g.live().isTorn());
        }
        assertTrue(g.r().inPlace());
        assertTrue(
            g.r().nativeBytes() <= g.r().stagingBudget(),
            "the receiver holds no receive buffers, only staging within its budget: "
                + g.r().nativeBytes()
                + " > "
                + g.r().stagingBudget());
      }
    }
  }

  @Test
  void stagedShardsBeyondTheBudgetGoInWavesAndEveryByteStillMatches() {
    // Trainer TP=1 -> inference TP=2: every row-parallel shard is read in part, so it is staged
    // (its
    // boundary tiles or whole) before it is copied into the live weights.
    InferenceTopology tp2 = InferenceTopology.tp(2);
    try (Rig wide = rig(new TrainerTopology.Megatron(1, 1, 1), tp2, 1, 0)) {
      wide.trainers().fill(0);
      Map<String, Object> one = wide.r().updateWeights(0);
      assertFalse(one.containsKey("staging_waves"), one.toString());
      long all = wide.r().nativeBytes();
      long needed;
      try (Rig probe = rig(new TrainerTopology.Megatron(1, 1, 1), tp2, 1, 1)) {
        probe.trainers().fill(0);
        needed =
            assertThrows(StagingWaves.BudgetException.class, () -> probe.r().updateWeights(0))
                .neededBytes();
      }
      assertTrue(all > needed, "this plan stages more than its largest unit: " + all);
      // Room for the largest staged unit but not for all of them: several waves.
      try (Rig narrow = rig(new TrainerTopology.Megatron(1, 1, 1), tp2, 1, needed)) {
        for (long step = 0; step < 2; step++) {
          narrow.trainers().fill(step);
          Map<String, Object> m = narrow.r().updateWeights(step);
          assertTrue(
              ((Number) m.get("staging_waves")).doubleValue() > 1,
              "waves: " + m.get("staging_waves"));
          assertEquals(0L, m.get("unverified_bytes"), m.toString());
          assertEquals(List.of(), mismatches(narrow.live(), tp2, 1, step));
        }
        assertTrue(narrow.r().nativeBytes() <= needed, "staging " + narrow.r().nativeBytes());
      }
    }
  }

  @Test
  void aBudgetBelowTheLargestStagedUnitFailsAtPrepareNamingTheTensorAndTheBytesNeeded() {
    InferenceTopology tp2 = InferenceTopology.tp(2);
    try (Rig g = rig(new TrainerTopology.Megatron(1, 1, 1), tp2, 1, 100)) {
      g.trainers().fill(0);
      StagingWaves.BudgetException e =
          assertThrows(StagingWaves.BudgetException.class, () -> g.r().updateWeights(0));
      assertTrue(e.getMessage().contains("mx.receiver.staging-bytes=100 bytes"), e.getMessage());
      assertTrue(e.getMessage().contains("of tensor '"), e.getMessage());
      assertTrue(e.getMessage().contains("it needs at least"), e.getMessage());
      assertEquals(-1, g.live().lastStep(), "nothing was written");
      assertFalse(g.live().isTorn());
    }
  }

  @Test
  void aCorruptedShardFailsTheStepAsTornAndTheNextStepRepairsEveryByte() {
    InferenceTopology tp2 = InferenceTopology.tp(2);
    try (Rig g = rig(new TrainerTopology.Megatron(4, 1, 1), tp2, 0, 0)) {
      g.trainers().fill(0);
      g.r().updateWeights(0);
      g.trainers().fill(1);
      // Flip a byte after the digests were taken: the receiver digests what it read.
      CpuDigestProvider digests = new CpuDigestProvider();
      Map<String, SourceInfo> published = g.trainers().sources(digests);
      Shard victim = published.get("model.layers.0.mlp.down_proj.weight").shards().get(0);
      Receiver corrupted =
          Receiver.builder()
              .config(ReceiverConfig.defaults().withRank(0).withThreads(2))
              .transport(g.transport())
              .discovery(timeout -> new DiscoveredSources(published, g.trainers().peerMetadata()))
              .geometry(new VllmLayout(MODEL, tp2, 0, DType.BF16))
              .inPlace(g.live())
              .installer(g.live())
              .digests(digests)
              .build();
      MemorySegment bytes = g.trainers().bytesOf(victim);
      bytes.set(ValueLayout.JAVA_BYTE, 7, (byte) (bytes.get(ValueLayout.JAVA_BYTE, 7) ^ 0x5A));
      try (corrupted) {
        TornInstallException e =
            assertThrows(TornInstallException.class, () -> corrupted.updateWeights(1));
        assertTrue(e.getMessage().contains("digest mismatch"), e.getMessage());
        assertTrue(e.getMessage().contains(victim.session()), e.getMessage());
        assertTrue(e.getMessage().contains("rank 0 step 1"), e.getMessage());
        assertFalse(e.restored());
        assertTrue(g.live().isTorn());
        assertEquals(1, g.live().tornStep());
        assertEquals(0, g.live().lastStep(), "step 1 was never installed");
      }
      g.trainers().fill(2);
      g.r().updateWeights(2);
      assertFalse(g.live().isTorn(), "a successful step makes the weights whole again");
      assertEquals(List.of(), mismatches(g.live(), tp2, 0, 2));
    }
  }
}
