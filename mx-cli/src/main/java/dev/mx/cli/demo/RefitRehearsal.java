package dev.mx.cli.demo;

import dev.mx.api.util.Closeables;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Two refits of a tiny model rehearsed inside a receiver's JVM, in memory (the {@code mem}
 * transport and a {@code memory:} store of its own), through the code a real step runs: versioned
 * publishes, the shard-table codec, leases, planning, an in-place wire with staged shards,
 * verification and install. A cold JVM loads and compiles all of that during its first refit, which
 * made the first step several times slower than the next; rehearsed while the trainers write their
 * first step, the first real refit finds it ready. It shares nothing with the real refit (its own
 * transports, store, names and memory, about a megabyte) and only logs when it fails.
 */
final class RefitRehearsal {
  /** The smallest layout with the default demo's shape: trainer TP=4 to inference TP=2. */
  private static final String MODEL = "tiny-llama";

  private static final int TRAINERS = 4;

  private RefitRehearsal() {}

  /** {@link #run}, for {@link dev.mx.refit.embed.InferenceRank.Builder#rehearsal}. */
  static void runUnchecked(WorkerSpec real) {
    try {
      run(real);
    } catch (RuntimeException e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("refit rehearsal interrupted", e);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Publishes steps 0 and 1 of {@link #MODEL} from {@link #TRAINERS} in-process trainers and
   * installs each on inference rank 0 of two, in place, with the real run's dtypes, wire and
   * verification; returns the step the rehearsal receiver installed last (1).
   */
  static long run(WorkerSpec real) throws Exception {
    WorkerSpec spec =
        new WorkerSpec(
            "trainer",
            0,
            MODEL,
            Map.of("tp", TRAINERS),
            Map.of("tp", 2),
            "mem",
            "memory:mx-refit-rehearsal-" + UUID.randomUUID(),
            "mx-refit-rehearsal",
            // Quantized sources need a tile-aligned model: the rehearsal moves their full
            // precision.
            Fp8Format.quantizedSource(real)
                ? Fp8Format.trainerMaster(real).shortName()
                : real.trainerDtype(),
            Fp8Format.quantizedSource(real)
                ? Fp8Format.trainerMaster(real).shortName()
                : real.inferenceDtype(),
            real.wire(),
            real.verify(),
            real.timeoutSeconds(),
            real.heartbeatSeconds(),
            "host",
            real.stallLimitSeconds(),
            "in-place",
            1,
            0,
            null,
            null,
            false,
            null,
            null);
    List<Worker> workers = new ArrayList<>();
    try {
      List<Worker> trainers = new ArrayList<>();
      for (int r = 0; r < TRAINERS; r++) {
        Worker t = Workers.create(spec.withRole("trainer", r), true);
        workers.add(t);
        trainers.add(t);
        t.start();
      }
      Worker receiver = new InferenceWorker(spec.withRole("receiver", 0), true, false);
      workers.add(receiver);
      receiver.start();
      long installed = -1;
      for (long step = 0; step < 2; step++) {
        for (Worker t : trainers) {
          t.step(step);
        }
        installed = ((Number) receiver.step(step).get("step")).longValue();
        receiver.commit(step);
      }
      return installed;
    } finally {
      Closeables.closeAll(workers.reversed());
    }
  }
}
