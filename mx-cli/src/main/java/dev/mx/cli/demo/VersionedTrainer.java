package dev.mx.cli.demo;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.layout.gen.ChangeSchedule;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.embed.TrainerRank;
import dev.mx.refit.publish.Publisher;
import java.io.PrintWriter;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * {@code mx publish --steps N}: one trainer rank publishing N weight versions (docs/VERSIONS.md),
 * one every {@code --interval} seconds, from two generator-filled buffer sets, then serving them
 * until interrupted. SIGTERM or Ctrl-C marks its slots STALE before the JVM exits.
 */
public final class VersionedTrainer {
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(VersionedTrainer.class);

  private VersionedTrainer() {}

  /**
   * Adds a rank's buffers and zero-copy aliases (its published shards) to a publisher: the
   * allocator's registrations where it has them (served, left to the buffers), else the segments to
   * register.
   */
  public static Consumer<Publisher.Builder> tensors(
      TrainerRankLayout layout, TrainerBuffers buffers) {
    return p -> {
      if (buffers.registrations().isEmpty()) {
        buffers.segments().values().forEach(p::buffer);
      } else {
        buffers.registrations().values().forEach(p::buffer);
      }
      aliases(p, layout, buffers::segment);
    };
  }

  /**
   * Adds every shard a rank holds, replicas included, to a publisher as zero-copy aliases into the
   * buffers that {@code buffer} names (host buffers, or their device copies).
   */
  static void aliases(
      Publisher.Builder p, TrainerRankLayout layout, Function<String, MemorySegment> buffer) {
    for (AliasShard a : layout.aliases()) {
      p.alias(
          a.hfName(),
          layout.dtype(),
          a.globalShape(),
          a.shardOffset(),
          a.shape(),
          buffer.apply(a.bufferName()),
          a.elementOffset() * layout.dtype().elementSize());
      if (!a.published()) {
        // A box a lower rank owns: listed without tile digests, read with the owner's.
        p.replica(a.hfName(), a.shardOffset());
      }
    }
  }

  /**
   * Publishes one step, retrying every second while the store is unreachable (a restarting Redis),
   * up to {@code patience}.
   */
  static WeightVersion publishRetrying(
      TrainerRank publisher, long step, java.util.function.IntConsumer writer, Duration patience)
      throws InterruptedException {
    long deadline = System.nanoTime() + patience.toNanos();
    while (true) {
      try {
        return publisher.publish(step, writer);
      } catch (dev.mx.metadata.MetadataStoreException e) {
        if (System.nanoTime() - deadline > 0) {
          throw e;
        }
        LOG.warn(
            "trainer slot {}: step {} not published yet ({}); retrying",
            publisher.slot(),
            step,
            e.getMessage());
        Thread.sleep(1000);
      }
    }
  }

  static int run(WorkerSpec ws, long firstStep, int steps, Duration interval, PrintWriter out)
      throws Exception {
    TrainerRankLayout layout =
        Workers.trainerTopology(ws)
            .layout(ModelConfigs.load(ws.model()), Fp8Format.trainerMaster(ws))
            .ranks()
            .get(ws.rank());
    List<AutoCloseable> owned = new ArrayList<>();
    try {
      Transport transport = Workers.transport(ws, Workers.trainerSession(ws, ws.rank()));
      owned.add(transport);
      MetadataStore store = MetadataStores.open(ws.metadata());
      owned.add(store);
      // From the transport (shared memory over shm, mapped by same-host receivers); closed before
      // it.
      TrainerBuffers[] sets = {
        TrainerBuffers.allocate(layout, transport::allocate),
        TrainerBuffers.allocate(layout, transport::allocate)
      };
      owned.add(sets[0]);
      owned.add(sets[1]);
      // With quantized sources, their codes and scales beside them.
      QuantizedSets quantized = QuantizedSets.of(ws, layout);
      if (quantized != null) {
        owned.add(quantized);
        quantized.allocate(transport::allocate);
        quantized.allocate(transport::allocate);
      }
      // Which tensors a step changes; the rank keeps each shard's last-changed step.
      ChangeSchedule schedule = new ChangeSchedule(ModelConfigs.load(ws.model()), ws.changed());
      TrainerRank publisher =
          TrainerRank.builder(transport, store, ws.identity())
              .job(ws.rank(), ws.trainerWorldSize(), Workers.trainerTopology(ws).toString())
              .workerId(Workers.trainerSession(ws, ws.rank()))
              .heartbeatInterval(Workers.seconds(ws.heartbeatSeconds()))
              .leaseWait(Workers.cap(ws))
              .stallLimit(Workers.stallLimit(ws))
              .versions(true)
              .bufferSet(
                  quantized != null ? quantized.tensors(0, sets[0]) : tensors(layout, sets[0]))
              .bufferSet(
                  quantized != null ? quantized.tensors(1, sets[1]) : tensors(layout, sets[1]))
              .start();
      owned.add(publisher);
      int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
      PhaseTicker progress = new PhaseTicker("mx publish: rank " + ws.rank() + ": ", System.err);
      owned.add(progress);
      for (int i = 0; i < steps; i++) {
        long step = firstStep + i;
        progress.phase("writing step " + step + " (" + layout.byteSize() + " bytes)");
        WeightVersion v =
            publishRetrying(
                publisher,
                step,
                set -> {
                  sets[set].fill(name -> schedule.stepOf(name, step), threads);
                  if (quantized != null) {
                    quantized.quantize(set, sets[set], threads);
                  }
                  progress.phase("digesting and publishing step " + step);
                },
                Workers.readTimeout(ws));
        progress.phase("step " + step + " published; serving it");
        out.println(
            "trainer rank "
                + ws.rank()
                + ": published step "
                + step
                + " as version '"
                + v.id()
                + "' of '"
                + ws.identity()
                + "' ("
                + v.state()
                + (v.missingSlots().isEmpty() ? "" : ", waiting for slots " + v.missingSlots())
                + ")");
        out.flush();
        if (i + 1 < steps) {
          Thread.sleep(interval.toMillis());
        }
      }
      out.println(
          "trainer rank "
              + ws.rank()
              + ": "
              + steps
              + " version(s) published on "
              + ws.metadata()
              + " over "
              + ws.transport()
              + "; serving until interrupted");
      out.flush();
      new CountDownLatch(1).await();
      return 0;
    } finally {
      Closeables.closeAll(owned.reversed());
    }
  }
}
