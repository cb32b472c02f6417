package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.error.FalseUnchangedClaimException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.layout.gen.ChangeSchedule;
import dev.mx.layout.gen.FloatBits;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.GlobalElement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.publish.ChangeLog;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Delta refits over real trainer memory (mem transport, in place): shards carry the last-changed
 * step a real {@link ChangeLog} derives from their digests; the receiver reads only the tensors
 * that changed, keeps the rest, and every live element equals the generator's value at the step
 * that last changed its tensor. A publisher claiming a changed tensor unchanged fails the step
 * before any byte moves, naming the tensor.
 */
class DeltaRefitTest {
  private static final DType DTYPE = DType.BF16;

  /** Trainer memory, the publishers' claims, and one receiver rank writing {@code live}. */
  private static final class Rig implements AutoCloseable {
    final ModelArchitecture model;
    final InferenceTopology inference = InferenceTopology.tp(2);
    final int rank;
    final TrainerCluster trainers;
    final Transport transport;
    final LiveWeights live;
    final Receiver receiver;
    final ChangeLog changes = new ChangeLog();
    final CpuDigestProvider digests = new CpuDigestProvider();
    long step;

    /** Test double of a publisher's table: rewrites the claims before the receiver sees them. */
    UnaryOperator<Map<String, SourceInfo>> claims = UnaryOperator.identity();

    Rig(String modelName, int rank) {
      this.model = ModelConfigs.load(modelName);
      this.rank = rank;
      trainers = new TrainerCluster(new TrainerTopology.Megatron(2, 1, 1).layout(model, DTYPE));
      transport =
          new dev.mx.transport.mem.MemTransportProvider()
              .create(TransportConfig.of("receiver-" + rank));
      VllmLayout geometry = new VllmLayout(model, inference, rank, DTYPE);
      live = new LiveWeights(geometry.params());
      live.registerWith(transport);
      receiver =
          Receiver.builder()
              .config(ReceiverConfig.defaults().withRank(rank).withThreads(2))
              .transport(transport)
              .discovery(
                  timeout ->
                      new DiscoveredSources(claims.apply(published()), trainers.peerMetadata()))
              .rediscoverEachStep(true)
              .geometry(geometry)
              .inPlace(live)
              .installer(live)
              .digests(digests)
              .build();
    }

    /** The tables as a publisher with a change log announces them at {@link #step}. */
    Map<String, SourceInfo> published() {
      Map<String, SourceInfo> out = new LinkedHashMap<>();
      trainers
          .sources(digests, 4096)
          .forEach(
              (name, info) -> {
                List<Shard> shards = new ArrayList<>();
                for (Shard s : info.shards()) {
                  shards.add(
                      s.withChangedStep(
                          changes.observe(
                              name + "@" + s.session(), s.shardOffset(), s.digest(), step)));
                }
                out.put(name, new SourceInfo(info.globalShape(), info.dtype(), shards));
              });
      return out;
    }

    @Override
    public void close() {
      receiver.close();
      live.close();
      transport.close();
      trainers.close();
    }
  }

  @Test
  void onlyChangedTensorsMoveAndEveryLiveElementHoldsItsLastChange() {
    for (String name : List.of("tiny-llama", "tiny-qwen3-moe")) {
      ModelArchitecture model = ModelConfigs.load(name);
      ChangeSchedule schedule = new ChangeSchedule(model, 10);
      try (Rig g = new Rig(name, 1)) {
        VllmReference ref = new VllmReference(model, g.inference, 1);
        long fullBytes = 0;
        for (long step = 0; step < 4; step++) {
          long s = step;
          g.step = step;
          g.trainers.fill(t -> schedule.stepOf(t, s));
          Map<String, Object> m = g.receiver.updateWeights(step);
          long moved = (Long) m.get("bytes_received");
          Set<String> changed = schedule.changedAt(step);
          long needed = neededBytes(g.live, ref, changed);
          if (step == 0) {
            fullBytes = moved;
            assertEquals(0L, m.get("delta_kept_sources"), m.toString());
          } else {
            assertTrue((Long) m.get("delta_kept_sources") > 0, m.toString());
            assertTrue(moved < fullBytes, name + " step " + step + ": moved " + moved);
          }
          // Exactly the changed tensors' elements this rank holds, plus whatever boundary tiles
          // of theirs the plan stages.
          assertTrue(
              moved >= needed && moved <= fullBytes,
              name + " step " + step + ": moved " + moved + ", needed " + needed);
          assertEquals(List.of(), mismatches(g.live, ref, schedule, step), name + " step " + step);
          assertFalse(g.live.isTorn());
        }
      }
    }
  }

  @Test
  void aPublisherClaimingAChangedTensorUnchangedFailsClosedNamingIt() {
    try (Rig g = new Rig("tiny-llama", 0)) {
      g.trainers.fill(0);
      g.receiver.updateWeights(0);
      String lie = "model.layers.1.mlp.down_proj.weight";
      // Step 1 changes every tensor, but the table says this one still holds step 0's bytes.
      g.claims =
          sources -> {
            Map<String, SourceInfo> out = new LinkedHashMap<>(sources);
            SourceInfo info = sources.get(lie);
            List<Shard> shards = new ArrayList<>();
            info.shards().forEach(s -> shards.add(s.withChangedStep(0L)));
            out.put(lie, new SourceInfo(info.globalShape(), info.dtype(), shards));
            return out;
          };
      g.step = 1;
      g.trainers.fill(1);
      FalseUnchangedClaimException e =
          assertThrows(FalseUnchangedClaimException.class, () -> g.receiver.updateWeights(1));
      assertEquals(lie, e.source());
      assertTrue(e.getMessage().contains("'" + lie + "'"), e.getMessage());
      assertTrue(e.getMessage().contains("unchanged since step 0"), e.getMessage());
      // Refused before the first read: the live weights still hold step 0, whole.
      assertEquals(0L, g.live.lastStep());
      assertFalse(g.live.isTorn());
      assertEquals(
          List.of(),
          mismatches(g.live, new VllmReference(g.model, g.inference, 0), null, 0),
          "live weights after the refused step");
      // An honest table for the same step installs it.
      g.claims = UnaryOperator.identity();
      g.receiver.updateWeights(1);
      assertEquals(
          List.of(), mismatches(g.live, new VllmReference(g.model, g.inference, 0), null, 1));
    }
  }

  /** Bytes of the elements of this rank's parameters that come from {@code changed} tensors. */
  private static long neededBytes(LiveWeights live, VllmReference ref, Set<String> changed) {
    long n = 0;
    for (String p : live.layout().keySet()) {
      long numel = live.layout().get(p).shape().numel();
      for (long i = 0; i < numel; i++) {
        GlobalElement g = ref.source(p, i);
        if (g != null && changed.contains(g.tensor())) {
          n++;
        }
      }
    }
    return n * DTYPE.elementSize();
  }

  /**
   * Every live element against the generator at the step that last changed its tensor ({@code
   * schedule} null: every tensor at {@code step}); up to 5 descriptions.
   */
  private static List<String> mismatches(
      LiveWeights live, VllmReference ref, ChangeSchedule schedule, long step) {
    List<String> out = new ArrayList<>();
    for (String p : live.layout().keySet()) {
      MemorySegment data = live.parameter(p);
      long numel = live.layout().get(p).shape().numel();
      for (long i = 0; i < numel && out.size() < 5; i++) {
        GlobalElement g = ref.source(p, i);
        long want = 0;
        if (g != null) {
          long at = schedule == null ? step : schedule.stepOf(g.tensor(), step);
          want =
              VllmReference.castBits(
                  WeightGenerator.value(g.tensor(), at, g.flatIndex()), DTYPE, DTYPE);
        }
        long have = FloatBits.bitsAt(data, i, DTYPE);
        if (have != want) {
          out.add(
              p
                  + "["
                  + i
                  + "] = 0x"
                  + Long.toHexString(have)
                  + ", want 0x"
                  + Long.toHexString(want));
        }
      }
    }
    return out;
  }
}
