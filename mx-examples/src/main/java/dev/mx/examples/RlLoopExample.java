package dev.mx.examples;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.embed.InferenceRank;
import dev.mx.refit.embed.StepCoordinator;
import dev.mx.refit.embed.TargetGeometry;
import dev.mx.refit.embed.TpShard;
import dev.mx.refit.embed.TrainerRank;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * An RL loop's weight sync (docs/EMBEDDING.md, "An RL loop"): trainer ranks (TP=2) publish every
 * training step as a weight version from two buffer sets; inference ranks (TP=4, fused QKV) follow
 * the versions, lease each one while they read it, write it straight into the engine's live weights
 * (in place) and verify it; a coordinator makes a step live once every rank verified it. The last
 * step is then rejected by the engine (say, a health check failed on one rank) and every rank is
 * restored to the step before, which the trainers still hold in their other buffer set.
 */
public final class RlLoopExample {
  private static final Duration WAIT = Duration.ofSeconds(60);

  private RlLoopExample() {}

  /** Element {@code i} of global tensor {@code name} after training step {@code step}. */
  public static float value(String name, long i, long step) {
    return ExampleModel.value(name, i) + 0.5f * step;
  }

  /**
   * What the loop saw.
   *
   * @param committed per committed step, each inference rank's live weights right after the commit
   * @param restored each rank's live weights after the rejected step was rolled back
   * @param notes what the rollback said per rank
   */
  public record Result(
      List<List<Map<String, float[]>>> committed,
      List<Map<String, float[]>> restored,
      List<String> notes) {}

  /** Runs {@code steps} committed steps, then one more that is rejected and rolled back. */
  public static Result run(int steps) throws Exception {
    TransportProvider mem = TransportProvider.registry().select("mem");
    String identity = "rl-example-" + UUID.randomUUID();
    List<AutoCloseable> owned = new ArrayList<>();
    ExecutorService pool = Executors.newCachedThreadPool();
    try (Arena arena = Arena.ofShared()) {
      MetadataStore store = MetadataStores.open("memory:" + identity);
      owned.add(store);
      // Trainer rank t's shards of every tensor, in buffer set k: [t][k] -> name -> memory.
      List<List<Map<String, MemorySegment>>> buffers = new ArrayList<>();
      List<TrainerRank> trainers = new ArrayList<>();
      for (int t = 0; t < ExampleModel.TRAINER_TP; t++) {
        int trainer = t;
        TrainerRank.Builder b =
            TrainerRank.builder(mem.create(TransportConfig.of("trainer-" + t)), store, identity)
                .job(t, ExampleModel.TRAINER_TP, "tp=" + ExampleModel.TRAINER_TP)
                .workerId("trainer-" + t)
                .leaseWait(WAIT)
                .versions(true) // every step a weight version (docs/VERSIONS.md)
                .shutdownHook(false);
        List<Map<String, MemorySegment>> sets = new ArrayList<>();
        for (int k = 0; k < 2; k++) {
          Map<String, MemorySegment> set = new LinkedHashMap<>();
          for (String name : ExampleModel.GLOBALS.keySet()) {
            TpShard shard = ExampleModel.trainerShard(name, t);
            set.put(name, arena.allocate(shard.shape().numel() * 4, 64));
          }
          sets.add(set);
          b.bufferSet(
              p ->
                  set.forEach(
                      (name, seg) -> {
                        TpShard shard = ExampleModel.trainerShard(name, trainer);
                        p.tensor(
                            name, DType.F32, shard.global(), shard.offset(), shard.shape(), seg);
                      }));
        }
        buffers.add(sets);
        TrainerRank rank = b.start();
        owned.add(rank);
        trainers.add(rank);
      }

      List<InferenceRank> ranks = new ArrayList<>();
      List<LiveWeights> engines = new ArrayList<>();
      for (int r = 0; r < ExampleModel.INFERENCE_TP; r++) {
        TargetGeometry geometry = ExampleModel.receiverGeometry(r);
        LiveWeights live = new LiveWeights(geometry.params()); // the engine's weights
        owned.add(live);
        InferenceRank rank =
            InferenceRank.builder(mem.create(TransportConfig.of("inference-" + r)), store, identity)
                .rank(r)
                .live(live)
                .geometry(geometry)
                .config(ReceiverConfig.defaults().withTimeout(WAIT))
                .expect(
                    new Discovery.Expectation(
                        ExampleModel.TRAINER_TP, "tp=" + ExampleModel.TRAINER_TP))
                .followVersions(true) // wait for each step's version and lease it while reading
                .inPlace(true) // write the live weights themselves, no second copy
                .trainerBufferSets(2) // the step before stays readable: a failed step is restored
                .build();
        owned.add(rank);
        ranks.add(rank);
        engines.add(live);
        rank.start();
      }

      StepCoordinator coordinator = new StepCoordinator(pool);
      List<List<Map<String, float[]>>> committed = new ArrayList<>();
      for (long step = 0; step <= steps; step++) {
        publish(trainers, buffers, step, arena);
        long s = step;
        // Every rank reads, verifies and writes the step; none of it is served before the commit.
        coordinator.onAll(ranks, rank -> rank.step(s, WAIT));
        if (step < steps) {
          coordinator.commitAll(ranks, step);
          committed.add(snapshot(engines));
        }
      }
      // The engine rejects the last step: every rank goes back to the last committed one.
      List<String> notes = new ArrayList<>();
      StepCoordinator.rollBackAll(ranks, steps - 1, notes::add);
      return new Result(committed, snapshot(engines), notes);
    } finally {
      pool.shutdownNow();
      Closeables.closeAll(owned.reversed());
    }
  }

  /**
   * Each trainer rank writes its shards of {@code step} into the set it is handed, then lands it.
   */
  private static void publish(
      List<TrainerRank> trainers,
      List<List<Map<String, MemorySegment>>> buffers,
      long step,
      Arena arena) {
    for (int t = 0; t < trainers.size(); t++) {
      int rank = t;
      trainers
          .get(t)
          .publish(
              step,
              set ->
                  buffers
                      .get(rank)
                      .get(set)
                      .forEach(
                          (name, seg) -> {
                            // A real trainer's optimizer step writes here; this one recomputes.
                            MemorySegment global = ExampleModel.global(arena, name);
                            for (long i = 0; i < ExampleModel.GLOBALS.get(name).numel(); i++) {
                              global.setAtIndex(ValueLayout.JAVA_FLOAT, i, value(name, i, step));
                            }
                            ExampleModel.trainerShard(name, rank).copy(global, seg, 4);
                          }));
    }
  }

  private static List<Map<String, float[]>> snapshot(List<LiveWeights> engines) {
    List<Map<String, float[]>> out = new ArrayList<>();
    for (LiveWeights live : engines) {
      Map<String, float[]> m = new LinkedHashMap<>();
      for (String p : List.of("qkv_proj.weight", "o_proj.weight")) {
        m.put(p, live.parameter(p).toArray(ValueLayout.JAVA_FLOAT));
      }
      out.add(m);
    }
    return out;
  }

  public static void main(String[] args) throws Exception {
    Result r = run(3);
    System.out.println(
        r.committed().size()
            + " steps committed on "
            + ExampleModel.INFERENCE_TP
            + " inference ranks; the rejected step rolled back: "
            + r.notes());
  }
}
