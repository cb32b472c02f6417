package dev.mx.cli.demo;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.embed.InferenceRank;
import dev.mx.refit.embed.TrainerRank;
import dev.mx.refit.embed.WeightsDump;
import dev.mx.refit.fanout.InstalledPublisher;
import dev.mx.refit.fanout.RecordingGeometry;
import dev.mx.refit.version.VersionFollower;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code mx receive --follow}: one inference rank installing each new READY weight version as it
 * appears (docs/VERSIONS.md), beginning with the newest one, or {@code --steps N} of them, and
 * reporting the step each version carries. Waits for each version while the trainer ranks heartbeat
 * with progress (at most {@code --timeout} when given), failing naming a rank that stalled for
 * {@code --stall-limit}; a version with a STALE or vanished publisher is skipped.
 */
final class VersionedReceiver {
  private VersionedReceiver() {}

  /**
   * Follows until {@code versions} were installed (all of them when null, until interrupted); fills
   * the report with one row per installed version, numbered by the version's step. The first is the
   * version with id {@code firstVersion} when it is not null ({@link
   * VersionFollower#followVersion}). A rank serving its installed weights ({@code
   * --serve-installed}) then calls {@code reported} and serves the last version until interrupted,
   * as {@code mx publish} does, so that the engine reading it can.
   */
  static void run(
      WorkerSpec ws,
      Integer versions,
      String firstVersion,
      Path dump,
      DemoReport report,
      PrintWriter progress,
      Runnable reported)
      throws Exception {
    WorkerSpec.InferenceGroup group = ws.inferenceGroup();
    Transport transport = Workers.transport(ws, Workers.receiverSession(ws));
    MetadataStore store = MetadataStores.open(ws.metadata());
    // Served weights live in memory the transport allocated: a same-host reader maps them.
    EngineWeights engine = EngineWeights.create(ws, null, group.serves() ? transport : null);
    LiveWeights live = engine.live();
    RecordingGeometry geometry = new RecordingGeometry(engine.source());
    InstalledPublisher installed =
        group.serves()
            ? new InstalledPublisher(
                TrainerRank.builder(transport, store, Workers.installedIdentity(ws, group.index()))
                    .job(
                        ws.rank(),
                        Workers.inferenceTopology(ws).worldSize(),
                        Workers.installedTopology(ws))
                    .workerId(transport.localSession())
                    .stallLimit(Workers.stallLimit(ws)),
                live,
                live.registerWith(transport))
            : null;
    // Serving: no reader may lease the served step while the next one is copied in.
    dev.mx.api.refit.Installer committing =
        installed == null
            ? engine.installer()
            : (step, buffers) -> {
              installed.beforeWrite();
              engine.installer().install(step, buffers);
            };
    VersionFollower follower =
        VersionFollower.builder(store, Workers.sourceIdentity(ws))
            .holder(Workers.receiverSession(ws))
            .stallLimit(Workers.stallLimit(ws))
            .expect(Workers.sourceExpectation(ws))
            .installer(committing)
            // A trainer rank restarted under the same session is connected again before its version
            // is read.
            .transport(transport)
            .receivers(
                (discovery, installer) ->
                    Receiver.builder()
                        .config(
                            ReceiverConfig.defaults()
                                .withWire(ws.wire())
                                .withVerify(VerifyMode.parse(ws.verify()))
                                .withRank(ws.rank())
                                .withTimeout(Workers.readTimeout(ws))
                                .withDoubleBuffer(true))
                        .transport(transport)
                        .discovery(discovery)
                        .geometry(geometry)
                        .installer(installer)
                        .rediscoverEachStep(true)
                        .delta(!ws.noDelta())
                        .build())
            .build();
    try {
      if (ws.checkpointDir() != null) {
        installCheckpoint(ws, engine, geometry, report, progress);
        if (installed != null) {
          geometry.serve(installed, report.lastStep);
        }
      }
      // No cap unless --timeout: a version is waited for while the trainer ranks progress.
      Duration wait = Workers.cap(ws);
      for (int i = 0; versions == null || i < versions; i++) {
        long t0 = System.nanoTime();
        VersionFollower.Followed f =
            i == 0 && firstVersion != null
                ? follower.followVersion(firstVersion, wait)
                : follower.next(wait);
        Map<String, Object> m = new LinkedHashMap<>(f.metrics());
        m.put("wire_s", InferenceRank.wireSeconds(m));
        m.put("e2e_s", (System.nanoTime() - t0) / 1e9);
        m.putAll(engine.quantizationMetrics());
        if (installed != null) {
          m.put("serve_s", geometry.serve(installed, f.step()));
        }
        report.addStep((int) f.step(), ws.rank(), m);
        report.lastStep = f.step();
        progress.println(
            "receiver rank "
                + ws.rank()
                + ": installed version '"
                + f.version().id()
                + "' (step "
                + f.step()
                + ")");
        progress.flush();
      }
      if (dump != null) {
        WeightsDump.write(
            live, dump.resolve(Workers.receiverSession(ws) + ".safetensors"), ws.rank());
        writeRun(dump, report);
      }
      if (installed != null) {
        reported.run();
        progress.println(
            "receiver rank "
                + ws.rank()
                + ": serving step "
                + report.lastStep
                + " as '"
                + Workers.installedIdentity(ws, group.index())
                + "' until interrupted");
        progress.flush();
        new java.util.concurrent.CountDownLatch(1).await();
      }
    } finally {
      List<AutoCloseable> order = new java.util.ArrayList<>();
      // Readers of the served weights are told first (STALE), before the weights go.
      order.add(installed);
      order.addAll(List.of(follower, live, transport, store));
      Closeables.closeAll(order);
    }
  }

  /** Installs {@code --source checkpoint:DIR} before the first version is followed. */
  private static void installCheckpoint(
      WorkerSpec ws,
      EngineWeights engine,
      RecordingGeometry geometry,
      DemoReport report,
      PrintWriter progress) {
    try (dev.mx.refit.checkpoint.CheckpointSource cp =
        SourceOption.open(ws, dev.mx.layout.model.ModelConfigs.load(ws.model()))) {
      long step = SourceOption.stepOf(cp);
      ReceiverConfig config =
          ReceiverConfig.defaults()
              .withWire(ws.wire())
              .withVerify(VerifyMode.parse(ws.verify()))
              .withTimeout(Workers.readTimeout(ws));
      // In place unless the engine transforms what it installs (a quantizing install).
      Map<String, Object> m =
          engine.installer() == engine.live()
              ? dev.mx.refit.checkpoint.CheckpointInstall.installInPlace(
                  cp, step, ws.rank(), geometry, engine.live(), config)
              : dev.mx.refit.checkpoint.CheckpointInstall.install(
                  cp, step, ws.rank(), geometry, engine.installer(), config);
      report.addCheckpoint(ws.rank(), dev.mx.refit.checkpoint.CheckpointInstall.summary(cp, m));
      report.lastStep = step;
      progress.println(
          "receiver rank "
              + ws.rank()
              + ": installed step "
              + step
              + " from checkpoint "
              + cp.dir());
      progress.flush();
    }
  }

  /**
   * {@code run.json} as {@code mx demo} writes it; {@code last_step} is the step the installed
   * version carries.
   */
  private static void writeRun(Path dir, DemoReport report) throws Exception {
    Map<String, Object> run = new LinkedHashMap<>(report.run);
    run.put("steps", report.lastStep + 1);
    run.put("last_step", report.lastStep);
    // Every receiver of a job writes the same file: replace it in one step.
    Path tmp = Files.createTempFile(dir, ".run-", ".json");
    Files.writeString(tmp, dev.mx.cli.Json.mapper().writeValueAsString(run));
    Files.move(
        tmp,
        dir.resolve("run.json"),
        java.nio.file.StandardCopyOption.ATOMIC_MOVE,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }
}
