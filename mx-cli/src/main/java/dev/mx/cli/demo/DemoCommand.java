package dev.mx.cli.demo;

import dev.mx.api.transport.TransportProvider;
import dev.mx.cli.Json;
import dev.mx.refit.embed.StepCoordinator;
import dev.mx.refit.stage.StagingWaves;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mx demo}: a whole reshard refit job on this machine. Trainer ranks and inference ranks run
 * as child JVMs (or threads with {@code --in-process}) and meet through weight versions
 * (docs/VERSIONS.md): per step the trainers write the step's weights into a free buffer set and
 * land their slots of the step's version, while the receivers wait for it to become READY, lease
 * it, refit and verify; the orchestrator then commits the step on every receiver. The report
 * compares the wire rate with a memory copy measured at start.
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run a multi-process reshard refit of a real model layout and report it.",
      "",
      "Default: Llama-3.2-1B, Megatron trainer TP=4 -> vLLM inference TP=2, 3 steps, transport auto (shm on "
          + "Linux, else ucx when available, else mem with every rank in this process), file: metadata in a temporary folder, "
          + "every installed byte verified (--verify all).",
      "",
      "Exit 0 when every step verified and installed on every rank; 1 on any failure, naming the rank, tensor "
          + "or peer; 2 on bad usage. Receivers write their live weights in place (peak memory about the trainers' "
          + "and the receivers' weights once each, plus a 64 MiB staging budget per receiver): a publisher dead or "
          + "stopped when a step starts leaves them untouched; a step that fails part-way is put back on every rank "
          + "when the trainers keep a second buffer set (--trainer-buffers 2; over shm even from a killed trainer), "
          + "else reported torn; --install copy keeps every rank on the previous step whatever fails, for one more "
          + "copy of the weights per receiver (README, 'Memory and installs').",
      ""
    })
public final class DemoCommand extends JobOptions implements Callable<Integer> {

  @CommandLine.Mixin SourceOption source;

  @Option(
      names = "--steps",
      defaultValue = "3",
      description = "Refit steps (default ${DEFAULT-VALUE}).")
  int steps;

  @Option(
      names = "--metadata",
      description =
          "Metadata store URI (default: file: in a fresh temporary folder); mx://host:port for a"
              + " RefitService server, or "
              + MX_SERVE
              + " to start one (memory: backend) beside the job.")
  String metadata;

  /** {@code --metadata mx-serve}: a RefitService started beside the job, closed with it. */
  static final String MX_SERVE = "mx-serve";

  @Option(
      names = "--in-process",
      description = "Run every rank as a thread of this JVM over the mem transport.")
  boolean inProcess;

  @Option(
      names = "--dump",
      description =
          "After the last step write receiver-<rank>.safetensors (group<G>-receiver-<rank> for"
              + " later --inference-groups) and run.json here.")
  Path dump;

  @Option(
      names = "--fault",
      description =
          "Inject one fault into the last step: corrupt, kill-publisher or"
              + " stall-publisher (trainer 0, once the step is published); kill-publisher-mid-read"
              + " (in place: receiver 0 kills the trainer it reads from half-way through its reads"
              + " into the live weights, so the step fails part-way and is restored or reported"
              + " torn); or"
              + " trainer-topology: receivers expect another trainer topology than the trainers run.")
  String fault;

  @Option(
      names = "--install",
      defaultValue = "in-place",
      description =
          "How receivers install: in-place (default: reads land in the live weights, staged bytes"
              + " are verified before they are copied in; a step that fails part-way is restored from"
              + " the trainers' other buffer set with --trainer-buffers 2, else reported torn) or copy"
              + " (receive buffers beside the live weights, installed on every rank only once all"
              + " verified: one more copy of the weights per rank).")
  String install;

  @Option(
      names = "--trainer-buffers",
      defaultValue = "1",
      description =
          "Buffer sets per trainer rank: 1 (default: the trainer's own buffers, zero-copy; the next"
              + " step waits until receivers read the last) or 2 (one more copy of the trainer's"
              + " weights: training writes step N+1 while receivers read step N, and an in-place step"
              + " that fails is restored from the set still holding the previous step).")
  int trainerBuffers;

  @Option(
      names = "--overlap",
      negatable = true,
      defaultValue = "true",
      fallbackValue = "true",
      description =
          "With --trainer-buffers 2, the trainers write step N+1 while the receivers refit step N,"
              + " as soon as every receiver leased step N (default; --no-overlap: the next step"
              + " starts after the last one was committed). The report's step period shows the"
              + " gain. The version protocol decides what may overlap: a trainer writes only into"
              + " a buffer set no lease holds, so with one set, or in place (receivers keep the"
              + " previous step leased to restore it), the trainers wait for the commit anyway.")
  boolean overlap;

  @Option(
      names = "--staging-bytes",
      description =
          "Each receiver's staging budget (mx.receiver.staging-bytes), e.g. 64m (default: 64 MiB, or"
              + " what the largest staged unit needs).")
  String stagingBytes;

  @Option(
      names = "--inference-groups",
      defaultValue = "1",
      description =
          "Inference groups (engines), each of --inference's ranks, 1 to 8 (default"
              + " ${DEFAULT-VALUE}). Without --serve-installed every group reads the trainers; their"
              + " receivers are named group<G>-receiver-<rank> after the first group.")
  int inferenceGroups;

  @Option(
      names = "--serve-installed",
      description =
          "Fan-out: inference groups serve the weights they installed and verified, each step,"
              + " as a weight version of their own (a reader leases it; the group writes its next"
              + " step only once no lease holds it); group 0 reads the trainers, then in doubling"
              + " rounds groups [K, 2K) read groups [0, K) (1 from 0; 2, 3 from 0, 1; 4-7 from"
              + " 0-3). Needs --inference-groups 2 or more;"
              + " installs that transform what they pull (quantizing) and device weights cannot"
              + " serve.")
  boolean serveInstalled;

  @Option(names = "--json", description = "Print one JSON document instead of tables.")
  boolean json;

  @Option(
      names = "--verbose",
      description = "Show the workers' logs and refit records (coverage, stage) on stderr.")
  boolean verbose;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /** The orchestrator's call bound without {@code --timeout}: none that a run could reach. */
  private static final Duration NO_CAP = Duration.ofDays(365);

  /** Set by the shutdown hook: failures after it are the signal's doing, not the workers'. */
  private volatile boolean signalled;

  /**
   * Held while a worker is launched and added to its list, and while the shutdown hook marks the
   * run signalled: a worker is either in a list the hook stops, or never started (a worker started
   * after the hook looked would outlive the run and recreate its temporary folder).
   */
  private final Object launches = new Object();

  @Override
  public Integer call() throws Exception {
    validate();
    dev.mx.api.transport.MemoryKind memory = DeviceCheck.kind(spec, device);
    String noDevice = DeviceCheck.unavailable(memory);
    if (noDevice != null) {
      // Before any worker starts: the device's availability holder said why.
      if (json) {
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("ok", false);
        doc.put("error", noDevice);
        doc.put("run", null);
        doc.put("baseline_gbps", null);
        doc.put("steps", List.of());
        Json.print(spec.commandLine().getOut(), doc);
      }
      spec.commandLine().getErr().println("mx demo: error: " + noDevice);
      return 1;
    }
    if (!verbose) {
      // The per-step records are for operators' log pipelines; the report already carries their
      // numbers.
      System.setProperty("org.slf4j.simpleLogger.log.dev.mx", "warn");
      System.setProperty("org.slf4j.simpleLogger.log.dev.mx.refit.records", "error");
    } else {
      // The per-step stage records are DEBUG for library users; --verbose shows them.
      System.setProperty("org.slf4j.simpleLogger.log.dev.mx.refit.records", "debug");
    }
    PrintWriter out = spec.commandLine().getOut();
    Progress progress =
        new Progress(
            System.err, !json && dev.mx.cli.Terminal.isTerminal(dev.mx.cli.Terminal.STDERR));
    DemoPlan plan = resolve(progress, memory);
    checkServing(plan);
    dev.mx.rl.RefitServer refitService = null;
    if (MX_SERVE.equals(metadata)) {
      refitService =
          dev.mx.rl.RefitServer.builder()
              .port(0)
              .ownedBackend(new dev.mx.rl.memory.MemoryRefitBackend(dev.mx.rl.RefitClock.system()))
              .build();
      metadata = "mx://" + refitService.address();
      progress.note("RefitService (memory: backend) serving the job at " + metadata);
    }
    if (metadata != null) {
      // A store the ranks cannot reach fails here, in seconds and naming it, before the baseline
      // and any worker.
      dev.mx.metadata.MetadataStores.open(metadata).close();
    }
    DemoReport report = new DemoReport(plan.runFields());
    String checkpointSource = source.resolved(spec);
    if (checkpointSource != null) {
      report.run.put("source", checkpointSource);
    }
    report.run.put("source_order", sourceOrder(checkpointSource != null));
    report.trainerRanks = plan.base("").trainerWorldSize();
    report.baselineGbps = DemoReport.memoryCopyGbps();
    progress.note(
        String.format(Locale.ROOT, "memory-copy baseline: %.2f GB/s", report.baselineGbps));

    Path tmp = Files.createTempDirectory("mx-demo-");
    // Read by the shutdown hook and the memory sampler while workers are launched.
    List<WorkerHandle> trainers = new CopyOnWriteArrayList<>();
    List<WorkerHandle> receivers = new CopyOnWriteArrayList<>();
    ShmCleanup.reclaim(); // what earlier runs' killed workers left; loads the classes for the end
    MemoryWatch memoryWatch = new MemoryWatch(() -> processes(trainers, receivers));
    Thread cleanup =
        new Thread(
            () -> {
              synchronized (launches) {
                signalled = true;
              }
              progress.done();
              System.err.println(
                  "mx demo: stopped by a signal: stopping the workers and removing " + tmp);
              stopChildren(concat(receivers, trainers));
              closeAll(receivers, trainers, tmp);
            },
            "mx-demo-cleanup");
    Runtime.getRuntime().addShutdownHook(cleanup);
    ExecutorService pool =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "mx-demo-call");
              t.setDaemon(true);
              return t;
            });
    long installedStep = -1;
    PeerProgress peers = null;
    // With overlap: where the orchestrator watches the receivers' leases, one connection per run.
    dev.mx.api.metadata.MetadataStore leases = null;
    try {
      WorkerSpec base =
          plan.base(metadata != null ? metadata : "file:" + tmp.resolve("metadata"))
              .withExpertMap(expertMapJson())
              .withDelta(changed, noDelta)
              .withSource(checkpointSource);
      if (base.checkpointDir() != null) {
        // Once here, before any receiver: a bad checkpoint fails at once, naming the file, and
        // the receivers find its digests cached.
        progress.note("opening checkpoint " + base.checkpointDir() + " ...");
        try (dev.mx.refit.checkpoint.CheckpointSource cp =
            SourceOption.open(base, dev.mx.layout.model.ModelConfigs.load(base.model()))) {
          progress.note(
              "checkpoint: step "
                  + SourceOption.stepOf(cp)
                  + ", "
                  + cp.tensors().size()
                  + " tensors in "
                  + cp.files().size()
                  + " file(s), digests of "
                  + cp.filesDigestedFromCache()
                  + " from the cache");
        }
      }
      peers =
          new PeerProgress(
              base.metadata(), base.identity(), Duration.ofSeconds(2), progress::waitingOn);
      // Every wait inside the workers is bounded by the liveness of whom it waits on; the
      // orchestrator's calls are capped only when --timeout sets a cap.
      Duration callTimeout =
          timeoutSeconds != null
              ? Duration.ofMillis((long) (timeoutSeconds * 1000 * 3 + 60_000))
              : NO_CAP;
      progress.note(
          "starting "
              + base.trainerWorldSize()
              + " trainer(s) and "
              + plan.receivers() * inferenceGroups
              + " receiver(s) "
              + (plan.inProcess() ? "in this process" : "as child JVMs")
              + " ...");
      for (int r = 0; r < base.trainerWorldSize(); r++) {
        launchInto(trainers, plan, base.withRole("trainer", r), tmp);
      }
      WorkerSpec receiverBase = base;
      if ("trainer-topology".equals(fault)) {
        // The receivers expect another trainer job than the one publishing: discovery must refuse
        // it at once.
        Map<String, Integer> other = new LinkedHashMap<>(base.trainer());
        other.put("tp", other.getOrDefault("tp", 1) == 1 ? 2 : other.getOrDefault("tp", 1) / 2);
        other.remove("fsdp");
        receiverBase = base.withTrainer(other);
        progress.note(
            "fault 'trainer-topology': receivers expect trainer "
                + other
                + ", trainers run "
                + base.trainer());
      }
      // Group g's ranks are receivers[g * size, (g + 1) * size).
      for (int g = 0; g < inferenceGroups; g++) {
        for (int r = 0; r < plan.receivers(); r++) {
          WorkerSpec rs = receiverBase.withRole("receiver", r);
          if (inferenceGroups > 1) {
            rs = rs.withGroup(new WorkerSpec.InferenceGroup(g, inferenceGroups, serveInstalled));
          }
          launchInto(receivers, plan, rs, tmp);
        }
      }
      // The receivers that read the trainers: the first group, or every group.
      List<WorkerHandle> fromTrainers =
          serveInstalled ? receivers.subList(0, plan.receivers()) : receivers;
      onAll(pool, trainers, Map.of("cmd", "start"), callTimeout);
      List<Map<String, Object>> started =
          onAll(pool, receivers, Map.of("cmd", "start"), callTimeout);
      for (int r = 0; r < started.size(); r++) {
        if (started.get(r).get("checkpoint") instanceof Map<?, ?> c) {
          report.addCheckpoint(r, c);
          // Live from the checkpoint until the first live step commits.
          installedStep = ((Number) c.get("step")).longValue();
        }
      }
      boolean overlapping = overlap && trainerBuffers == 2;
      report.run.put("overlap", overlapping);
      if (overlapping) {
        leases = dev.mx.metadata.MetadataStores.open(base.metadata());
      }
      // Faults go into the last step; trainer-topology is the receivers' own, from the start.
      boolean injects = fault != null && !fault.equals("trainer-topology");
      long lastCommit = System.nanoTime();
      // With overlap, the trainers' publish of the next step, started while the receivers refit.
      Future<List<Map<String, Object>>> nextPublish = null;
      // Steps whose publish began while the receivers still refitted the step before.
      Set<Integer> publishedDuringRefit = java.util.concurrent.ConcurrentHashMap.newKeySet();
      for (int s = 0; s < steps; s++) {
        boolean last = s == steps - 1;
        boolean faultStep = last && injects;
        Map<String, Object> step = Map.of("cmd", "step", "step", s);
        List<Map<String, Object>> results;
        progress.step(s, steps, "trainers write and publish step " + s);
        if (faultStep) {
          // The fault goes in once the version is READY and before any receiver reads it (or, for
          // a kill mid-read, is armed in the receivers, who kill trainer 0 after their first read).
          onAll(pool, trainers, step, callTimeout);
          injectFault(trainers.get(0), trainers, receivers, callTimeout);
          progress.note(
              "fault '"
                  + fault
                  + "' "
                  + (MidReadKill.KIND.equals(fault)
                      ? "armed in " + receivers.getFirst().name()
                      : "injected into " + trainers.get(0).name()));
          progress.step(s, steps, "receivers refit step " + s);
          results = onAll(pool, fromTrainers, step, callTimeout);
        } else {
          // Both sides at once: no barrier between them. Each receiver waits until the step's
          // version is READY (every trainer's slot landed) and leases it; a trainer writes only
          // into a buffer set no lease holds.
          Future<List<Map<String, Object>>> publishing =
              nextPublish != null
                  ? nextPublish
                  : pool.submit(() -> onAll(pool, trainers, step, callTimeout));
          nextPublish = null;
          progress.step(
              s,
              steps,
              s == 0
                  ? "receivers wait for version step-0 from the trainers, then plan and register"
                  : "receivers wait for version step-" + s + " from the trainers, then refit");
          Future<List<Map<String, Object>>> refitting =
              pool.submit(() -> onAll(pool, fromTrainers, step, callTimeout));
          boolean nextFaults = s + 1 == steps - 1 && injects;
          if (overlapping && !last && !nextFaults) {
            nextPublish =
                startNextPublish(
                    leases,
                    base,
                    s,
                    fromTrainers.size(),
                    publishing,
                    refitting,
                    pool,
                    trainers,
                    callTimeout,
                    publishedDuringRefit);
          }
          try {
            results = refitting.get();
          } catch (ExecutionException failed) {
            Exception receiversFailed =
                failed.getCause() instanceof Exception c
                    ? c
                    : new IllegalStateException(failed.getCause());
            // A trainer's failure is the cause more often than not (the version never became
            // READY): say it first.
            Exception trainersFailed = failureOf(publishing, callTimeout);
            if (trainersFailed != null) {
              trainersFailed.addSuppressed(receiversFailed);
              throw trainersFailed;
            }
            throw receiversFailed;
          }
          Exception trainersFailed = failureOf(publishing, callTimeout);
          if (trainersFailed != null) {
            throw trainersFailed;
          }
        }
        // Every rank staged and verified the step's version: only now does any of them make it
        // live.
        List<Map<String, Object>> commits =
            new StepCoordinator(pool).commitAll(ranks(fromTrainers, callTimeout), s);
        List<Map<String, Object>> all = new ArrayList<>();
        for (int r = 0; r < results.size(); r++) {
          all.add(DemoReport.withInstallTime(results.get(r), commits.get(r)));
        }
        // Fan-out in doubling rounds: groups [k, 2k) read the step from groups [0, k), which serve
        // it now, each reading one of them (WorkerSpec.InferenceGroup).
        for (int first = 1; serveInstalled && first < inferenceGroups; first *= 2) {
          int end = Math.min(2 * first, inferenceGroups);
          List<WorkerHandle> round =
              receivers.subList(first * plan.receivers(), end * plan.receivers());
          progress.step(
              s,
              steps,
              (end - first == 1
                  ? "group " + first + " refits step " + s + " from group 0"
                  : "groups "
                      + first
                      + "-"
                      + (end - 1)
                      + " refit step "
                      + s
                      + " from groups 0-"
                      + (end - first - 1)));
          List<Map<String, Object>> read = onAll(pool, round, step, callTimeout);
          List<Map<String, Object>> made =
              new StepCoordinator(pool).commitAll(ranks(round, callTimeout), s);
          for (int r = 0; r < read.size(); r++) {
            all.add(DemoReport.withInstallTime(read.get(r), made.get(r)));
          }
        }
        long now = System.nanoTime();
        for (int i = 0; i < all.size(); i++) {
          Map<String, Object> m = all.get(i);
          int group = i / plan.receivers();
          m.put("source", sourceOf(group));
          m.put("period_s", (now - lastCommit) / 1e9);
          m.put("publish_overlapped", publishedDuringRefit.contains(s));
          report.addStep(
              s, inferenceGroups > 1 ? i / plan.receivers() : -1, i % plan.receivers(), m);
        }
        lastCommit = now;
        // The step the installed version carries (each receiver installed exactly the version of
        // step s).
        installedStep = ((Number) commits.get(0).get("step")).longValue();
      }
      progress.step(steps, steps, "done");
      progress.done();
    } catch (Exception e) {
      progress.done();
      if (!signalled && plan.install().equals("in-place") && installedStep >= 0) {
        // In place, a rank may have installed the step another rank failed: put every rank back on
        // the last committed step where the trainers' other buffer set still holds it, and learn
        // which ranks are torn.
        List<Map<String, Object>> states =
            StepCoordinator.rollBackAll(
                ranks(receivers, Duration.ofMinutes(5)), installedStep, progress::note);
        for (int i = 0; inferenceGroups > 1 && i < states.size(); i++) {
          // Receivers are listed group by group: name each by its group and rank in it.
          Map<String, Object> named = new LinkedHashMap<>();
          named.put("group", i / plan.receivers());
          named.put("rank", i % plan.receivers());
          states.get(i).forEach((k, v) -> named.putIfAbsent(k, v));
          states.set(i, named);
        }
        report.liveWeights.addAll(states);
      }
      report.fail(
          signalled
              ? "stopped by a signal"
              : e.getMessage() == null ? e.toString() : e.getMessage());
    } finally {
      report.lastStep = installedStep;
      try {
        if (dump != null) {
          writeDump(pool, receivers, report, Duration.ofMinutes(5));
        }
      } catch (Exception e) {
        report.fail(
            "dump to "
                + dump
                + " failed: "
                + (e instanceof IOException io
                    ? dev.mx.cli.IoErrors.reason(io, dump)
                    : e.getMessage()));
      }
      pool.shutdownNow();
      if (peers != null) {
        peers.close();
      }
      if (leases != null) {
        leases.close();
      }
      memoryWatch.close();
      report.memory = memoryWatch.report(report.weightBytes());
      closeAll(receivers, trainers, tmp);
      if (refitService != null) {
        refitService.close();
      }
      try {
        Runtime.getRuntime().removeShutdownHook(cleanup);
      } catch (IllegalStateException ignored) {
        // Already shutting down.
      }
    }
    if (json) {
      Json.print(out, report.toJson());
    } else {
      report.printTables(out);
    }
    if (!report.ok) {
      if (!signalled) {
        spec.commandLine().getErr().println("mx demo: error: " + report.error);
      }
      return 1;
    }
    return 0;
  }

  /**
   * The demo's own options; the job's (steps, wire, verification, timeouts, topologies) were
   * checked by {@link OptionChecks} before the command ran.
   */
  private void validate() {
    if (!List.of("in-place", "copy").contains(install)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--install must be in-place or copy, got '" + install + "'");
    }
    if (trainerBuffers != 1 && trainerBuffers != 2) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--trainer-buffers must be 1 or 2, got " + trainerBuffers);
    }
    if (stagingBytes != null) {
      OptionChecks.stagingBudget(spec.commandLine(), "--staging-bytes", stagingBytes);
    }
    if (fault != null
        && !List.of(
                "corrupt",
                "kill-publisher",
                MidReadKill.KIND,
                "stall-publisher",
                "trainer-topology")
            .contains(fault)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--fault must be corrupt, kill-publisher, "
              + MidReadKill.KIND
              + ", stall-publisher or trainer-topology, got '"
              + fault
              + "'");
    }
    if (MidReadKill.KIND.equals(fault) && !"in-place".equals(install)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--fault " + MidReadKill.KIND + " needs --install in-place, got --install " + install);
    }
    if (inferenceGroups < 1 || inferenceGroups > 8) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--inference-groups must be 1 to 8, got " + inferenceGroups);
    }
    if (serveInstalled && inferenceGroups < 2) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--serve-installed needs --inference-groups 2 or more (a group serves the next one)");
    }
  }

  /** Where group {@code g} reads each step: {@code trainer} or {@code installed:group-<source>}. */
  private String sourceOf(int g) {
    WorkerSpec.InferenceGroup group =
        new WorkerSpec.InferenceGroup(g, inferenceGroups, serveInstalled);
    return group.readsInstalled() ? "installed:group-" + group.sourceGroup() : "trainer";
  }

  /**
   * Where each inference group takes its weights, in order: a checkpoint once at start (every group
   * that reads the trainers), then each step from the trainers or, with {@code --serve-installed},
   * from its source group (doubling rounds, {@link WorkerSpec.InferenceGroup}).
   */
  private List<Map<String, Object>> sourceOrder(boolean checkpoint) {
    List<Map<String, Object>> groups = new ArrayList<>();
    for (int g = 0; g < inferenceGroups; g++) {
      WorkerSpec.InferenceGroup group =
          new WorkerSpec.InferenceGroup(g, inferenceGroups, serveInstalled);
      List<String> order = new ArrayList<>();
      if (checkpoint && !group.readsInstalled()) {
        order.add("checkpoint");
      }
      order.add(sourceOf(g));
      Map<String, Object> entry = new LinkedHashMap<>();
      entry.put("group", g);
      entry.put("sources", order);
      if (group.readsInstalled()) {
        entry.put("round", group.round());
      }
      entry.put("serves_installed", group.serves());
      groups.add(entry);
    }
    return groups;
  }

  /**
   * {@code --serve-installed}: a group serves the bytes its geometry says it installed, so neither
   * an install that transforms them (quantizing) nor device weights (not served yet) can.
   */
  private void checkServing(DemoPlan plan) {
    if (!serveInstalled) {
      return;
    }
    if (Fp8Format.isFp8Block(plan.inferenceDtype()) && !Fp8Format.isFp8Block(plan.trainerDtype())) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--serve-installed: receivers quantize what they install (--inference-dtype "
              + plan.inferenceDtype()
              + "), so their weights are not the bytes they read and cannot be served; drop one");
    }
    if (plan.device().isDevice()) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--serve-installed serves host weights; drop --device " + plan.device());
    }
  }

  private DemoPlan resolve(Progress progress, dev.mx.api.transport.MemoryKind memory) {
    Map<String, Integer> t;
    try {
      t = Topology.trainer("--trainer", trainer);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    Map<String, Integer> inf = Topology.parse("--inference", inference, "tp", "ep");
    if (inf.get("ep") != 1 && !inf.get("ep").equals(inf.get("tp"))) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--inference '" + inference + "': ep must be 1 or equal to tp");
    }
    String resolvedModel = model;
    String tDtype = trainerLabel();
    String iDtype = inferenceLabel(tDtype);
    String chosen;
    if (memory.isDevice()) {
      // Device weights move device to device: cuda-ipc on one host (also between threads of one
      // process).
      chosen =
          transport.equals("auto")
              ? TransportProvider.registry().select("cuda-ipc").name()
              : TransportProvider.registry().select(transport).name();
      if (chosen.equals("mem")) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--device "
                + memory
                + ": the mem transport"
                + " reads host memory only; use --transport auto or cuda-ipc");
      }
    } else if (inProcess) {
      chosen = "mem";
      if (!transport.equals("auto") && !transport.equals("mem")) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--in-process runs over the mem transport; drop --transport " + transport);
      }
    } else {
      chosen =
          transport.equals("auto")
              ? TransportProvider.registry().select("auto").name()
              : TransportProvider.registry().select(transport).name();
      if (chosen.equals("mem")) {
        progress.note("transport mem works within one JVM: running every rank in this process");
      }
    }
    boolean threads = ranksShareThisProcess(memory, chosen);
    if (fault != null && threads && !fault.equals("corrupt") && !fault.equals("trainer-topology")) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--fault "
              + fault
              + " needs ranks in separate processes (a transport other than mem, without --in-process)");
    }
    return new DemoPlan(
        t,
        inf,
        chosen,
        threads,
        inf.get("tp"),
        resolvedModel,
        tDtype,
        iDtype,
        wire,
        verify,
        steps,
        capSeconds(),
        verbose,
        memory,
        // A stopped publisher is noticed within the stall limit: keep the fault's run short.
        fault != null && fault.equals("stall-publisher")
            ? Math.min(
                stallLimitSeconds != null
                    ? stallLimitSeconds
                    : dev.mx.metadata.progress.ProgressSettings.stallLimit(
                                dev.mx.api.util.Settings.system())
                            .toMillis()
                        / 1000.0,
                10)
            : stallSeconds(),
        // A quantizing install writes other bytes than the receivers pull: a copy, never in place.
        // Quantized sources are installed as pulled, so they may land in place.
        Fp8Format.isFp8Block(iDtype) && !Fp8Format.isFp8Block(tDtype) ? "copy" : install,
        trainerBuffers,
        stagingBytes == null ? 0 : StagingWaves.parseBytes(stagingBytes));
  }

  /**
   * Whether every rank runs as a thread of this JVM, as OptionChecks needs to know before the run:
   * with {@code --in-process}, or when host weights go over mem, which reaches only its own JVM's
   * memory.
   */
  boolean ranksShareThisProcess(CommandLine.Model.CommandSpec cmd) {
    return ranksShareThisProcess(
        DeviceCheck.kind(cmd, device), TransportProvider.registry().select(transport).name());
  }

  private boolean ranksShareThisProcess(dev.mx.api.transport.MemoryKind memory, String chosen) {
    return inProcess || (!memory.isDevice() && chosen.equals("mem"));
  }

  /** Launches a worker into {@code into}, unless a signal stopped the run. */
  private void launchInto(List<WorkerHandle> into, DemoPlan plan, WorkerSpec spec, Path tmp)
      throws IOException {
    synchronized (launches) {
      if (signalled) {
        throw new IllegalStateException(
            "stopped by a signal before " + spec.role() + " " + spec.rank() + " started");
      }
      into.add(launch(plan, spec, tmp));
    }
  }

  private static WorkerHandle launch(DemoPlan plan, WorkerSpec spec, Path tmp) throws IOException {
    int group = spec.inferenceGroup().index();
    String name = (group > 0 ? "group " + group + " " : "") + spec.role() + " " + spec.rank();
    if (plan.inProcess()) {
      return new InProcessWorker(name, Workers.create(spec, true));
    }
    String specJson = Json.mapper().writeValueAsString(spec);
    return new ChildWorker(
        name,
        List.of("worker", "--versions", "--spec", specJson),
        tmp.resolve(
            (spec.role().equals("receiver")
                    ? Workers.receiverSession(spec)
                    : spec.role() + "-" + spec.rank())
                + ".log"),
        Map.of(),
        plan.verbose());
  }

  /**
   * Starts the trainers' publish of step {@code s + 1} once they published step {@code s} and every
   * receiver leased it (or the receivers' step ended, successfully or not): from then on step
   * {@code s}'s buffer set is held by the receivers' leases, so the trainers write the other one
   * while the receivers read.
   */
  private static Future<List<Map<String, Object>>> startNextPublish(
      dev.mx.api.metadata.MetadataStore leases,
      WorkerSpec base,
      int s,
      int receivers,
      Future<List<Map<String, Object>>> publishing,
      Future<List<Map<String, Object>>> refitting,
      ExecutorService pool,
      List<WorkerHandle> trainers,
      Duration callTimeout,
      Set<Integer> publishedDuringRefit) {
    Map<String, Object> next = Map.of("cmd", "step", "step", s + 1);
    return pool.submit(
        () -> {
          publishing.get();
          LeaseWatch.awaitHolders(
              leases.versions(), base.identity(), "step-" + s, receivers, refitting::isDone);
          if (refitting.isDone() && refitting.state() != Future.State.SUCCESS) {
            return List.of(); // the step failed: the run ends, nothing more to publish
          }
          if (!refitting.isDone()) {
            publishedDuringRefit.add(s + 1);
          }
          return onAll(pool, trainers, next, callTimeout);
        });
  }

  /** The failure of a finished or finishing call on every worker, or null when it succeeded. */
  private static Exception failureOf(Future<?> call, Duration timeout) throws InterruptedException {
    try {
      call.get(timeout.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
      return null;
    } catch (java.util.concurrent.ExecutionException e) {
      return e.getCause() instanceof Exception ex ? ex : e;
    } catch (java.util.concurrent.TimeoutException e) {
      call.cancel(true);
      return new dev.mx.api.error.MxException(
          "the trainers did not publish within " + timeout.toSeconds() + " s");
    }
  }

  private void injectFault(
      WorkerHandle victim,
      List<WorkerHandle> trainers,
      List<WorkerHandle> receivers,
      Duration timeout)
      throws Exception {
    switch (fault) {
      case "corrupt" -> victim.call(Map.of("cmd", "fault", "kind", "corrupt"), timeout);
      case MidReadKill.KIND -> MidReadKill.armIn(receivers.getFirst(), trainers, timeout);
      case "kill-publisher" -> victim.kill();
      case "stall-publisher" -> victim.stall();
      default -> throw new IllegalStateException(fault);
    }
  }

  /** Sends a command to every worker at once and waits for all; the first failure wins. */
  private static List<Map<String, Object>> onAll(
      ExecutorService pool, List<WorkerHandle> workers, Map<String, Object> cmd, Duration timeout)
      throws Exception {
    return new StepCoordinator(pool).onAll(workers, w -> w.call(cmd, timeout));
  }

  /** A receiver as the step coordinator drives it, each command under {@code timeout}. */
  private record ReceiverRank(WorkerHandle worker, Duration timeout)
      implements StepCoordinator.Rank {
    @Override
    public String name() {
      return worker.name();
    }

    @Override
    public boolean isAlive() {
      return worker.isAlive();
    }

    @Override
    public Map<String, Object> commit(long step) throws Exception {
      return worker.call(Map.of("cmd", "commit", "step", step), timeout);
    }

    @Override
    public Map<String, Object> rollback(long to) throws Exception {
      return worker.call(Map.of("cmd", "rollback", "to", to), timeout);
    }
  }

  private static List<ReceiverRank> ranks(List<WorkerHandle> receivers, Duration timeout) {
    return receivers.stream().map(w -> new ReceiverRank(w, timeout)).toList();
  }

  /** This process and every child worker, by name, for the memory sampler. */
  private static Map<String, Long> processes(
      List<WorkerHandle> trainers, List<WorkerHandle> receivers) {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("orchestrator", ProcessHandle.current().pid());
    for (WorkerHandle w : concat(trainers, receivers)) {
      if (w instanceof ChildWorker c) {
        m.put(w.name(), c.pid());
      }
    }
    return m;
  }

  private void writeDump(
      ExecutorService pool, List<WorkerHandle> receivers, DemoReport report, Duration timeout)
      throws Exception {
    Files.createDirectories(dump);
    if (report.lastStep < 0) {
      // Nothing was ever installed: zeros would pass for weights. run.json alone says so.
      System.err.println(
          "mx demo: no step was installed: no weights dumped to "
              + dump
              + " (run.json has last_step -1)");
    } else {
      // Torn weights are not dumped (a mix of two steps): every other live rank is.
      List<WorkerHandle> dumped = new ArrayList<>();
      for (int i = 0; i < receivers.size(); i++) {
        boolean torn =
            i < report.liveWeights.size() && "torn".equals(report.liveWeights.get(i).get("state"));
        if (receivers.get(i).isAlive() && !torn) {
          dumped.add(receivers.get(i));
        }
      }
      onAll(pool, dumped, Map.of("cmd", "dump", "dir", dump.toAbsolutePath().toString()), timeout);
    }
    Map<String, Object> run = new LinkedHashMap<>(report.run);
    run.put("last_step", report.lastStep);
    Files.writeString(dump.resolve("run.json"), Json.mapper().writeValueAsString(run));
  }

  /** How long a signalled child may take to run its shutdown hooks before it is killed. */
  static final Duration CHILD_STOP_GRACE = Duration.ofSeconds(15);

  /**
   * SIGTERM or Ctrl-C: stops every child JVM at once with SIGTERM (a busy child would not read
   * "exit"; with Ctrl-C from a terminal a child may ignore the SIGINT its process group got), so
   * that each runs its shutdown hooks: trainers mark their slots STALE and delete their {@code
   * /dev/shm} files. A child still there after {@link #CHILD_STOP_GRACE} is killed.
   */
  private static void stopChildren(List<WorkerHandle> workers) {
    List<ChildWorker> children = new ArrayList<>();
    for (WorkerHandle w : workers) {
      if (w instanceof ChildWorker c) {
        c.terminate();
        children.add(c);
      }
    }
    try {
      for (ChildWorker c : children) {
        if (!c.awaitExit(CHILD_STOP_GRACE)) {
          System.err.println(
              "mx demo: "
                  + c.name()
                  + " (pid "
                  + c.pid()
                  + ") did not exit within "
                  + CHILD_STOP_GRACE.toSeconds()
                  + " s of SIGTERM: killed it; the next shm start on this host reclaims its files");
        }
      }
    } catch (InterruptedException e) {
      children.forEach(ChildWorker::kill);
      Thread.currentThread().interrupt();
    }
  }

  private static List<WorkerHandle> concat(List<WorkerHandle> a, List<WorkerHandle> b) {
    List<WorkerHandle> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static void closeAll(
      List<WorkerHandle> receivers, List<WorkerHandle> trainers, Path tmp) {
    // Receivers first: they read from the trainers' memory.
    for (List<WorkerHandle> group : List.of(receivers, trainers)) {
      for (WorkerHandle w : group) {
        try {
          w.close();
        } catch (RuntimeException ignored) {
          // Keep closing the rest.
        }
      }
    }
    try (Stream<Path> walk = Files.walk(tmp)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | java.io.UncheckedIOException ignored) {
      // Already gone (the shutdown hook and the main thread may both be deleting it).
    }
    // A worker killed by a fault or because it would not exit left its shared-memory files:
    // give their memory back now rather than at the next shm start on this host.
    ShmCleanup.reclaimAndSay(System.err);
  }
}
