package dev.mx.refit;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.TornInstallException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.memory.MemoryOpsProvider;
import dev.mx.api.metrics.RefitListener;
import dev.mx.api.metrics.RefitListeners;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.GeometrySource;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.refit.WireGroups;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.api.util.Settings;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.stage.ConvertMatch;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.ElementCoverage;
import dev.mx.refit.stage.LocalCopies;
import dev.mx.refit.stage.PipelinedWire;
import dev.mx.refit.stage.PlanGates;
import dev.mx.refit.stage.RefitReport;
import dev.mx.refit.stage.ShardStaging;
import dev.mx.refit.stage.SourceChecks;
import dev.mx.refit.stage.StagedWork;
import dev.mx.refit.stage.StagingWaves;
import dev.mx.refit.verify.ShardVerifier;
import dev.mx.refit.wire.WirePolicies;
import dev.mx.refit.wire.WireStages;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiver side of a refit (ModelExpress; ARCHITECTURE §7.4), a short composition of named
 * stages (package {@code dev.mx.refit.stage}).
 *
 * <p>Prepare (first call, or after {@link #invalidate}): discover ({@link SourceChecks}: every
 * source's shards tile its shape) → capture the engine's geometry → plan → coverage record and the
 * {@link ElementCoverage} gate (every parameter element written exactly once) → {@link
 * ShardStaging} (which shards land whole in staging to be verified) → connect peers → allocate and
 * register buffers once → compile {@link LocalCopies} and the {@link ShardVerifier} per set of
 * receive buffers.
 *
 * <p>Every refit: {@link Descriptors} (cached) → {@link PipelinedWire} (the wire, with each peer's
 * work — staged shards verified then copied, digests of shards that landed whole — starting on the
 * workers as soon as that peer's reads landed) → {@link ThroughputCeiling} → re-slice of full pulls
 * → casts → install → {@link RefitReport}.
 *
 * <p>Atomicity: the {@link Installer} is called only after every step above succeeded. A failed
 * refit installs nothing, leaves the engine's live weights untouched, and leaves the receiver
 * usable for the next step. With {@link ReceiverConfig#doubleBuffer()} the receiver alternates
 * between two sets of receive buffers, so the set the engine was last given is never written by a
 * later refit until the next successful install — an installer may then adopt the buffers without
 * copying.
 *
 * <p>Memory: receive buffers and staging are host memory unless {@link Builder#memory} names a
 * device ({@code cuda:N}); then they are allocated, registered, re-sliced, cast, copied and
 * digested through that kind's {@link MemoryOps} (a {@link MemoryOpsProvider}), and the installer
 * is handed device memory.
 *
 * <p>The receiver does not own the transport, discovery, geometry source or installer; it owns its
 * native memory, registrations and worker threads, released by {@link #close()} (idempotent).
 */
public final class Receiver implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Receiver.class);

  /** Tag of the per-refit stage record. */
  public static final String STAGE_TAG = RefitReport.STAGE_TAG;

  public static final String STAGE_SCHEMA = RefitReport.STAGE_SCHEMA;

  private final ReceiverContext context;
  private final ReceiverConfig config;
  private final Transport transport;
  private final SourceDiscovery discovery;
  private final GeometrySource geometry;
  private final Installer installer;
  private final PlanBuilder planner;
  private final PlanBuilder strictPlanner;
  private final Supplier<WirePolicy> wirePolicy;
  private final Supplier<DigestProvider> digests;
  private final boolean rediscoverEachStep;

  /** Whether sources the publishers claim unchanged are kept rather than read (delta refits). */
  private final boolean delta;

  /** What the live weights hold, shared by every receiver writing them in place; or null. */
  private final DeltaState sharedDelta;

  private final RefitRecords records;
  private final RefitListener listener;
  private final MemoryKind memory;

  /** The engine's live weights when the receiver writes them in place; null to copy at install. */
  private final InPlaceTarget inPlace;

  /**
   * Device operations for {@link #memory} (null for host memory), resolved at the first prepare.
   */
  private MemoryOps device;

  private Prepared prepared;
  private DigestProvider digestProvider;
  private Long sourceStep;

  /** The publishers' tables of the step about to be read (prepare's, or the last rediscovery's). */
  private Map<String, SourceInfo> currentSources;

  private int nextSet;
  private boolean closed;
  private long descriptorBuilds;

  private Receiver(Builder b) {
    this.context = b.concludedContext();
    this.config = context.config();
    this.transport = Objects.requireNonNull(b.transport, "transport");
    this.discovery = Objects.requireNonNull(b.discovery, "discovery");
    this.geometry = Objects.requireNonNull(b.geometry, "geometry");
    this.installer = Objects.requireNonNull(b.installer, "installer");
    this.planner = b.planner != null ? b.planner : context.defaultPlanner();
    if (b.strictPlanner != null) {
      this.strictPlanner = b.strictPlanner;
    } else if (planner instanceof ReshardPlanner rp) {
      this.strictPlanner = (capture, sources, maxSegments) -> rp.planStaged(capture, sources);
    } else {
      this.strictPlanner = null;
    }
    if (config.verify() == VerifyMode.STRICT && strictPlanner == null) {
      throw new IllegalStateException(
          "mx.receiver.verify=strict needs a strict staged planner (ModelExpress; ARCHITECTURE §7.3); "
              + "none was configured");
    }
    if (b.wirePolicy == null) {
      WirePolicy fromConfig = WirePolicies.create(config.wire());
      this.wirePolicy = () -> fromConfig;
    } else {
      this.wirePolicy = b.wirePolicy;
    }
    this.digests = Objects.requireNonNull(b.digests, "digests");
    this.rediscoverEachStep = b.rediscoverEachStep;
    // Without a fresh table per step there is no fresh claim to trust.
    this.delta = b.delta && b.rediscoverEachStep;
    this.sharedDelta = b.sharedDelta;
    this.records = Objects.requireNonNull(b.records, "records");
    this.listener = b.listeners.isEmpty() ? RefitListeners.jvmWide() : listenersOf(b);
    this.memory = Objects.requireNonNull(b.memory, "memory");
    this.inPlace = b.inPlace;
    if (context.inPlace() != (inPlace != null)) {
      throw new IllegalArgumentException(
          "the receiver context was concluded for a receiver "
              + (context.inPlace() ? "writing live weights in place" : "with receive buffers")
              + ", but this one "
              + (inPlace != null ? "writes them in place" : "has receive buffers"));
    }
    this.device = b.memoryOps != null && b.memoryOps.kind().isDevice() ? b.memoryOps : null;
    if (device != null && !device.kind().equals(memory)) {
      throw new IllegalArgumentException(
          "receiver memory " + memory + " but its memory operations are for " + device.kind());
    }
  }

  private static RefitListener listenersOf(Builder b) {
    List<RefitListener> all = new ArrayList<>();
    all.add(RefitListeners.jvmWide());
    all.addAll(b.listeners);
    return RefitListeners.of(all);
  }

  /**
   * Where the receive buffers and staging live ({@code host} unless {@link Builder#memory} said
   * otherwise).
   */
  public MemoryKind memory() {
    return memory;
  }

  public static Builder builder() {
    return new Builder();
  }

  public ReceiverConfig config() {
    return config;
  }

  /** Everything this receiver was configured with, concluded when it was built. */
  public ReceiverContext context() {
    return context;
  }

  /** The plan of the last successful prepare, or null before it. */
  public synchronized TransferPlan plan() {
    return prepared == null ? null : prepared.plan;
  }

  /** The coverage of the last successful prepare, or null before it. */
  public synchronized Coverage coverage() {
    return prepared == null ? null : prepared.coverage;
  }

  /** Whether this receiver writes the engine's live weights in place ({@link Builder#inPlace}). */
  public boolean inPlace() {
    return inPlace != null;
  }

  /** The staging budget of the last prepare in bytes, or -1 before it. */
  public synchronized long stagingBudget() {
    return prepared == null ? -1 : prepared.stagingBudget;
  }

  /** Native bytes held for receive buffers and staging (0 before prepare). */
  public synchronized long nativeBytes() {
    return prepared == null ? 0 : prepared.buffers.bytes();
  }

  /** How many times refits built their descriptor lists (a cache hit builds nothing). */
  public synchronized long descriptorBuilds() {
    return descriptorBuilds;
  }

  /**
   * Drops the plan and everything built for it (descriptor cache, buffers, registrations): the next
   * refit prepares again from discovery. Call it when publishers restarted or resharded; buffers
   * the installer was given before are released, so an installer must not hold them across this
   * call.
   */
  public synchronized void invalidate() {
    ensureOpen();
    if (prepared != null) {
      Prepared p = prepared;
      prepared = null;
      nextSet = 0;
      p.close();
    }
  }

  /**
   * Prepares now instead of on the first refit (discovery, capture, plan, gates, peers, buffers).
   * Does nothing when already prepared.
   */
  public synchronized void prepare() {
    ensureOpen();
    if (prepared == null) {
      prepared = doPrepare();
    }
  }

  /**
   * Runs one refit and returns its metrics: {@code step, bytes_received, segments, converts,
   * full_pull_sources, exact_descriptors, descriptor_savings, extra_wire_bytes, unbounded_sources,
   * fallback, verified_shards, unverifiable_shards} and every stage time in seconds (6 decimals;
   * the {@code prepare_*} stages only on the step that prepared).
   *
   * @throws dev.mx.api.error.MxException subclasses naming what failed; nothing was installed then
   */
  public synchronized Map<String, Object> updateWeights(long step) {
    ensureOpen();
    RefitListener.Refit id = new RefitListener.Refit(config.rank(), step, transport.name());
    long began = System.nanoTime();
    listener.refitStarted(id);
    Map<String, Double> stages = new LinkedHashMap<>();
    try {
      if (prepared != null && rediscoverEachStep) {
        rediscover(stages);
      }
      if (prepared == null) {
        prepared = doPrepare();
        stages.putAll(prepared.prepareStages);
      }
    } catch (RuntimeException e) {
      RefitReport.publishFailure(listener, id, began, e);
      throw e;
    }
    Prepared p = prepared;
    BufferSet set = p.sets.get(nextSet);
    try {
      Refitted done = refit(step, p, set, stages);
      done.report().publish(listener, id, began);
      return done.metrics();
    } catch (RuntimeException e) {
      LOG.warn(
          "rank {} step {}: refit failed, nothing was installed: {}",
          config.rank(),
          step,
          e.toString());
      RefitReport.publishFailure(listener, id, began, e);
      throw e;
    }
  }

  /**
   * Re-reads the publishers' tables before a warm step. Unchanged geometry keeps the plan and takes
   * the fresh digests (publishers write new weights in place and republish); changed geometry (a
   * restart or reshard) drops the plan so this step prepares again.
   */
  private void rediscover(Map<String, Double> stages) {
    long t = System.nanoTime();
    DiscoveredSources fresh = discovery.discover(config.timeout());
    SourceChecks.requireTiled(fresh.sources());
    stages.put("rediscover_s", seconds(t));
    if (!sameGeometry(prepared.found.sources(), fresh.sources())) {
      LOG.warn("rank {}: publishers changed their shard geometry; planning again", config.rank());
      invalidate();
      return;
    }
    for (BufferSet s : prepared.sets) {
      if (s.verifier != null) {
        s.verifier.refreshDigests(fresh.sources());
      }
      for (StagedWork w : s.local.staged()) {
        if (w.verifies()) {
          ShardStaging.Staged st = w.staged();
          String d = ShardVerifier.freshDigest(fresh.sources(), st.source(), st.shard(), st.tile());
          if (d == null) {
            throw new UnverifiableShardException(
                st.source(),
                st.shard().shardOffset(),
                st.shard().session(),
                "the publisher no longer publishes this staged shard or its digest");
          }
          w.refreshDigest(d);
        }
      }
    }
    sourceStep = fresh.step();
    currentSources = fresh.sources();
  }

  /**
   * One small read from every peer the step reads, into the probe buffer (staging, idle until the
   * wire starts, or a page of its own), never the live weights: a publisher that died since it
   * published, or stopped where the transport needs it to serve (ucx), fails the step here, naming
   * it, with the live weights untouched. One round trip for up to a probe buffer's worth of peers
   * at once, more rounds beyond.
   */
  private void probePeers(Prepared p, List<Descriptors> waves) {
    Map<String, ReadDescriptor> first = new LinkedHashMap<>();
    for (Descriptors d : waves) {
      d.firstReadPerSession().forEach(first::putIfAbsent);
    }
    int slots = (int) (p.probe.byteSize() / PROBE_BYTES);
    List<ReadDescriptor> probes = new ArrayList<>(Math.min(slots, first.size()));
    for (ReadDescriptor r : first.values()) {
      probes.add(
          new ReadDescriptor(
              r.session(),
              r.srcAddr(),
              p.probe.address() + (long) PROBE_BYTES * probes.size(),
              Math.min(PROBE_BYTES, r.nbytes())));
      if (probes.size() == slots) {
        transport.read(probes, config.timeout());
        probes.clear();
      }
    }
    if (!probes.isEmpty()) {
      transport.read(probes, config.timeout());
    }
  }

  /** Bytes the probe reads from each peer, and the most peers one probe round reaches. */
  private static final int PROBE_BYTES = 8;

  private static final int PROBE_PEERS = 512;

  /** Same sources, shapes, dtypes and shards, digests aside ({@link SourceChecks#sameGeometry}). */
  static boolean sameGeometry(Map<String, SourceInfo> a, Map<String, SourceInfo> b) {
    return SourceChecks.sameGeometry(a, b);
  }

  /** A refit's report (for listeners) and the metrics map {@code updateWeights} returns. */
  private record Refitted(RefitReport report, Map<String, Object> metrics) {}

  private Refitted refit(long step, Prepared p, BufferSet set, Map<String, Double> stages) {
    WirePolicy policy = wirePolicy.get();
    // Delta: sources held unchanged in this buffer set are not read (checked before any read).
    Set<String> kept = delta ? set.delta.unchanged(currentSources, p.keepable()) : Set.of();
    // Descriptors: reuse while the plan is unchanged.
    long t = System.nanoTime();
    boolean cache = context.cacheDescriptors();
    List<Descriptors> waves = set.cached;
    if (!kept.isEmpty()) {
      waves = buildWaves(p, set, kept);
      descriptorBuilds++;
    } else {
      if (!cache || waves == null) {
        waves = buildWaves(p, set, Set.of());
        descriptorBuilds++;
      }
      set.cached = cache ? waves : null;
    }
    stages.put("descriptor_build_s", seconds(t));
    long bytes = 0;
    long segments = 0;
    for (Descriptors d : waves) {
      bytes += d.bytes();
      segments += d.segments();
    }

    // In place, the live weights are written from the first read on: a failure after this point
    // leaves them torn until restored or refitted. A publisher already dead (or stopped, where the
    // transport needs it) fails the probe, before that point.
    if (inPlace != null) {
      probePeers(p, waves);
      inPlace.writing(step);
    }
    AtomicInteger verified = new AtomicInteger();
    boolean batch = context.batchInstall();
    try {
      // Wire, wave by wave (staged shards beyond the staging budget wait for the next wave), with
      // each peer's verification and staged copies starting as soon as that peer landed.
      Map<String, Double> wire = new LinkedHashMap<>();
      for (int w = 0; w < waves.size(); w++) {
        Map<ReadDescriptor, List<Runnable>> onLanded = new HashMap<>();
        Map<String, List<Runnable>> work = perPeerWork(set, p.waveOf, w, verified, kept, onLanded);
        PipelinedWire.run(
                policy,
                transport,
                waves.get(w),
                work,
                onLanded,
                p.workers,
                config.timeout(),
                context.pipeline(),
                context.landingBytes())
            .forEach((k, v) -> wire.merge(k, v, Double::sum));
      }
      if (waves.size() > 1) {
        stages.put("staging_waves", (double) waves.size());
      }
      stages.putAll(wire);
      ThroughputCeiling.check(context.maxGbps(), records, config.rank(), step, bytes, wire);

      if (set.local.resliceCount() > 0) {
        t = System.nanoTime();
        set.local.reslice(batch, p.workers, p.threads);
        stages.put("reslice_s", seconds(t));
        stages.put("reslice_copies", (double) set.local.resliceCount());
      }
      if (set.local.convertCount() > 0) {
        t = System.nanoTime();
        set.local.casts(batch, p.workers, p.threads);
        stages.put("convert_s", seconds(t));
      }
      // Install: only now does the engine see anything (in place: only now is the step whole).
      t = System.nanoTime();
      installer.install(step, set.params);
      if (inPlace != null && installer != inPlace) {
        inPlace.installed(step);
      }
      stages.put("install_s", seconds(t));
    } catch (RuntimeException e) {
      set.delta.forget();
      if (inPlace == null) {
        throw e;
      }
      inPlace.torn(step, e);
      throw new TornInstallException(
          "rank "
              + config.rank()
              + " step "
              + step
              + ": the in-place refit failed after it began writing the live weights ("
              + set.params.size()
              + " parameter(s) may hold a mix of the previous step and this one): "
              + (e.getMessage() == null ? e.toString() : e.getMessage()),
          config.rank(),
          step,
          e);
    }
    if (delta) {
      set.delta.installed(currentSources, p.usedSources);
    } else {
      // Shared with other receivers of the same live weights: what it held is overwritten now.
      set.delta.forget();
    }
    ShardVerifier.Outcome outcome =
        new ShardVerifier.Outcome(
            verified.get(),
            config.verify() == VerifyMode.OFF ? 0 : set.verifier.unverifiableCount());
    if (p.sets.size() > 1) {
      nextSet = (nextSet + 1) % p.sets.size();
    }
    long stagedUnverified = 0;
    long stagedUnverifiedBytes = 0;
    for (StagedWork w : set.local.staged()) {
      if (!w.verifies()) {
        stagedUnverified++;
        stagedUnverifiedBytes += w.installedBytes();
      }
    }
    long unverifiedBytes =
        switch (config.verify()) {
          case OFF -> bytes;
          case WHOLE_SHARDS -> set.verifier.unverifiableBytes() + stagedUnverifiedBytes;
          case ALL, STRICT -> 0L;
        };
    RefitReport report =
        new RefitReport(
            step,
            bytes,
            segments,
            p.plan,
            set.local.staged().size(),
            p.sourcesExact,
            p.sourcesStaged,
            p.sourcesFull,
            outcome.verified(),
            config.verify() == VerifyMode.OFF ? 0 : outcome.unverifiable() + stagedUnverified,
            unverifiedBytes,
            config.verify().label(),
            sourceStep == null ? -1 : sourceStep,
            stages);
    if (context.stageRecord()) {
      report.emit(
          records,
          context.stageRecordLevel(),
          config.rank(),
          stages.containsKey(WireStages.FUSED),
          batch);
    }
    Map<String, Object> metrics = new LinkedHashMap<>(report.metrics());
    metrics.put("delta_kept_sources", (long) kept.size());
    metrics.put("delta_kept_bytes", kept.isEmpty() ? 0L : Math.max(0, set.bytes - bytes));
    return new Refitted(report, java.util.Collections.unmodifiableMap(metrics));
  }

  /**
   * The work of wave {@code wave} that depends only on one peer's reads: each of its staged shards
   * (verify, then copy) and, in wave 0, each whole-shard and tile digest check, piece by piece into
   * {@code onLanded} where the digest combines pieces (each keyed by the read that lands it). The
   * digest provider is resolved only when something is digested.
   */
  private Map<String, List<Runnable>> perPeerWork(
      BufferSet set,
      Map<String, Integer> waveOf,
      int wave,
      AtomicInteger verified,
      Set<String> kept,
      Map<ReadDescriptor, List<Runnable>> onLanded) {
    Map<String, List<Runnable>> work = new LinkedHashMap<>();
    boolean checks =
        wave == 0 && config.verify() != VerifyMode.OFF && set.verifier.checkCount() > 0;
    List<StagedWork> staged = new ArrayList<>();
    for (StagedWork w : set.local.staged()) {
      // A kept source was not staged this step: its held bytes were verified when they landed.
      if (waveOf.getOrDefault(w.staged().key(), 0) == wave && !kept.contains(w.staged().source())) {
        staged.add(w);
      }
    }
    boolean digesting = checks;
    for (StagedWork w : staged) {
      digesting |= w.verifies();
    }
    DigestProvider dp = digesting ? digestProvider() : null;
    for (StagedWork w : staged) {
      work.computeIfAbsent(w.session(), k -> new ArrayList<>())
          .add(
              () -> {
                w.run(dp);
                if (w.verifies()) {
                  verified.incrementAndGet();
                }
              });
    }
    if (checks) {
      ShardVerifier.LandingWork lw = set.verifier.landingWork(dp, verified, kept);
      lw.bySession().forEach((s, l) -> work.computeIfAbsent(s, k -> new ArrayList<>()).addAll(l));
      onLanded.putAll(lw.byRead());
    }
    return work;
  }

  private DigestProvider digestProvider() {
    if (digestProvider == null) {
      // Device buffers are digested where they are: the CPU must not read them.
      digestProvider = device != null ? new dev.mx.refit.memory.OpsDigest(device) : digests.get();
    }
    return digestProvider;
  }

  // ---------------------------------------------------------------- prepare

  private Prepared doPrepare() {
    Map<String, Double> stages = new LinkedHashMap<>();
    long t = System.nanoTime();
    DiscoveredSources found = discovery.discover(config.timeout());
    SourceChecks.requireTiled(found.sources());
    sourceStep = found.step();
    currentSources = found.sources();
    stages.put("prepare_discover_s", seconds(t));

    t = System.nanoTime();
    List<ManifestEntry> manifest = new ArrayList<>();
    found
        .sources()
        .forEach(
            (name, info) ->
                manifest.add(new ManifestEntry(name, info.dtype(), info.globalShape())));
    Capture capture = geometry.capture(manifest);
    stages.put("prepare_capture_s", seconds(t));

    t = System.nanoTime();
    int maxSegments = context.maxSegmentsPerCopy();
    PlanBuilder builder = planner;
    if (config.verify() == VerifyMode.STRICT) {
      builder = strictPlanner;
    }
    TransferPlan plan;
    if (builder == planner
        && planner instanceof ReshardPlanner rp
        && config.bounding() == BoundingMode.SHARD) {
      // Shard bounding: a cost model (with this transport's declared costs) picks exact, staged or
      // full pull.
      plan = rp.plan(capture.result(), found.sources(), context.planOptions(transport));
    } else {
      plan = builder.plan(capture.result(), found.sources(), maxSegments);
    }
    stages.put("prepare_plan_s", seconds(t));

    Coverage coverage = Coverage.of(config.rank(), capture.result(), capture.paramLayout(), plan);
    coverage.emit(records);
    coverage.gate(context);
    PlanGates.rejectFallback(plan, capture);
    if (config.verify() == VerifyMode.STRICT) {
      PlanGates.requireComplete(capture, coverage);
    }
    t = System.nanoTime();
    ElementCoverage.check(capture, found.sources(), plan);
    stages.put("prepare_coverage_s", seconds(t));

    ShardStaging.Result staging =
        ShardStaging.apply(plan, found.sources(), config.verify() == VerifyMode.ALL);
    PlanGates.requireStagedDigests(config.verify(), staging);
    List<String> allParams =
        new ArrayList<>(
            new TreeSet<>(
                capture.result().copies().stream().map(RecordedCopy::paramName).toList()));

    t = System.nanoTime();
    PlanGates.connectPeers(transport, plan, found.peerMetadata());
    stages.put("prepare_handshake_s", seconds(t));

    if (memory.isDevice() && device == null) {
      device = MemoryOpsProvider.forKind(memory, MemoryOpsProvider.registry());
    }
    Prepared p = new Prepared(found, capture, plan, staging, coverage, stages, device);
    try {
      allocate(p, allParams);
    } catch (RuntimeException e) {
      try {
        p.close();
      } catch (RuntimeException closeFailure) {
        e.addSuppressed(closeFailure);
      }
      throw e;
    }
    LOG.info(
        String.format(
            Locale.ROOT,
            "rank %d prepared: %d descriptor(s) (%d exact before bounding), sources %d exact / %d shard-staged"
                + " (%d shard(s), %d staged here for verification) / %d full-pulled, %d convert(s), %.1f MB per pull,"
                + " %.1f MB extra wire, %d unbounded, %d fallback; verify %s: %d shard check(s), %d unverifiable,"
                + " %s wire, %.1f MB native (%s, staging budget %.1f MB, %d wave(s))",
            config.rank(),
            p.sets.get(0).descriptorCount,
            plan.exactDescriptorCount(),
            p.sourcesExact,
            p.sourcesStaged,
            staging.staged().size(),
            staging.restaged(),
            p.sourcesFull,
            plan.converts().size(),
            p.sets.get(0).bytes / 1e6,
            Math.max(0, p.sets.get(0).bytes - plan.exactBytes()) / 1e6,
            plan.unboundedSources().size(),
            plan.fallback().size(),
            config.verify().label(),
            p.sets.get(0).verifier.checkCount(),
            p.sets.get(0).verifier.unverifiableCount(),
            wirePolicy.get().name(),
            p.buffers.bytes() / 1e6,
            inPlace != null ? "in place" : "receive buffers",
            p.stagingBudget / 1e6,
            p.waveCount));
    return p;
  }

  private void allocate(Prepared p, List<String> allParams) {
    long t = System.nanoTime();
    Map<String, ParamSpec> layout = p.capture.paramLayout();
    TransferPlan wirePlan = p.staging.wirePlan();
    Map<String, Long> paramSizes = new LinkedHashMap<>();
    for (String param : allParams) {
      paramSizes.put(param, layout.get(param).byteSize());
    }
    Map<String, Long> fullSizes = new LinkedHashMap<>();
    for (FullPullSource f : wirePlan.fullPulls()) {
      fullSizes.put(f.srcName(), f.globalShape().byteSize(f.elsize()));
    }
    Map<Integer, Long> convertSizes = new LinkedHashMap<>();
    for (int i = 0; i < wirePlan.converts().size(); i++) {
      ConvertSource c = wirePlan.converts().get(i);
      convertSizes.put(i, c.destShape().byteSize(c.srcDtype().elementSize()));
    }
    long held = 0;
    String largestHeld = null;
    long largestHeldBytes = -1;
    for (Map.Entry<String, Long> e : fullSizes.entrySet()) {
      held += Slabs.align(e.getValue());
      if (e.getValue() > largestHeldBytes) {
        largestHeldBytes = e.getValue();
        largestHeld = "full pull of " + e.getKey();
      }
    }
    for (Map.Entry<Integer, Long> e : convertSizes.entrySet()) {
      held += Slabs.align(e.getValue());
      if (e.getValue() > largestHeldBytes) {
        largestHeldBytes = e.getValue();
        largestHeld = "convert of " + wirePlan.converts().get(e.getKey()).paramName();
      }
    }
    // Staged shards in waves that fit the staging budget, all waves sharing one slab.
    StagingWaves waves =
        StagingWaves.cut(
            p.staging.staged(), held, largestHeld, context.stagingBytes(), config.rank());
    p.stagingBudget = waves.budget();
    List<Map<String, MemorySegment>> receive = new ArrayList<>();
    if (inPlace != null) {
      receive.add(livePlaces(p, paramSizes));
    } else {
      int setCount = config.doubleBuffer() ? 2 : 1;
      for (int s = 0; s < setCount; s++) {
        receive.add(p.buffers.carve(paramSizes));
      }
    }
    p.fullStaging = p.buffers.carve(fullSizes);
    p.convertStaging = p.buffers.carve(convertSizes);
    Map<String, MemorySegment> shardStaging = new LinkedHashMap<>();
    // Staging the engine set aside with its live weights (registered with them), when it fits.
    MemorySegment reserved = inPlace == null ? MemorySegment.NULL : inPlace.staging();
    if (reserved.byteSize() > 0) {
      p.buffers.external(List.of(reserved));
    }
    MemorySegment slab = null;
    if (waves.waveBytes() > 0) {
      slab =
          reserved.byteSize() >= waves.waveBytes() ? reserved : p.buffers.slab(waves.waveBytes());
      for (int w = 0; w < waves.waves().size(); w++) {
        Map<String, Long> sizes = new LinkedHashMap<>();
        for (ShardStaging.Staged s : waves.waves().get(w)) {
          sizes.put(s.key(), s.stagingBytes());
          p.waveOf.put(s.key(), w);
        }
        shardStaging.putAll(Slabs.carve(slab, sizes));
      }
    }
    p.shardStaging = shardStaging;
    p.waveCount = waves.waves().size();
    if (inPlace != null) {
      // The probe lands where staged shards will, idle until the wire starts; else in its own page.
      long probe = (long) PROBE_BYTES * Math.clamp(p.found.peerMetadata().size(), 1, PROBE_PEERS);
      MemorySegment at =
          slab != null && slab.byteSize() >= probe
              ? slab
              : reserved.byteSize() >= probe ? reserved : p.buffers.slab(probe);
      p.probe = at.asSlice(0, probe);
    }
    p.stages().put("prepare_alloc_s", seconds(t));

    t = System.nanoTime();
    p.buffers.registerAll(transport);
    p.stages().put("prepare_register_s", seconds(t));

    p.threads = config.effectiveThreads();
    if (p.threads > 1) {
      p.workers = Executors.newFixedThreadPool(p.threads, workerThreads(config.rank()));
    }
    Set<String> used = new LinkedHashSet<>();
    for (RecordedCopy c : p.capture.result().copies()) {
      if (p.found.sources().containsKey(c.srcName())) {
        used.add(c.srcName());
      }
    }
    Set<String> staged = new LinkedHashSet<>();
    p.staging.staged().forEach(s -> staged.add(s.source()));
    Set<String> full = new LinkedHashSet<>();
    wirePlan.fullPulls().forEach(f -> full.add(f.srcName()));
    p.usedSources = java.util.List.copyOf(used);
    p.sourcesStaged = staged.size();
    p.sourcesFull = full.size();
    used.stream()
        .filter(s -> !staged.contains(s) && !full.contains(s))
        .forEach(s -> p.sourcesExact++);

    List<ConvertMatch.Target> targets = ConvertMatch.match(p.capture, p.found.sources(), p.plan);
    VerifyMode mode = config.verify();
    for (Map<String, MemorySegment> params : receive) {
      validateDestinations(p, params);
      BufferSet set =
          new BufferSet(
              params,
              inPlace == null
                  ? new DeltaState()
                  : sharedDelta != null ? sharedDelta : DeltaState.of(inPlace));
      set.local =
          LocalCopies.compile(
              p.staging,
              targets,
              layout,
              new LocalCopies.Buffers(params, p.fullStaging, p.convertStaging, p.shardStaging),
              s -> mode != VerifyMode.OFF && s.shard().digest() != null,
              device);
      List<Descriptors> ds = buildWaves(p, set, Set.of());
      for (Descriptors d : ds) {
        set.descriptorCount += d.segments();
        set.bytes += d.bytes();
      }
      set.verifier =
          ShardVerifier.plan(
              mode,
              p.found.sources(),
              used,
              ds.get(0).verifiable(),
              p.buffers::resolve,
              p.threads,
              device);
      p.sets.add(set);
    }
  }

  private static ThreadFactory workerThreads(int rank) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread th = new Thread(r, "mx-refit-r" + rank + "-" + n.incrementAndGet());
      th.setDaemon(true);
      return th;
    };
  }

  /**
   * The descriptor stage: every read of one refit into the given buffer set, by staging wave (wave
   * 0 holds every exact, full-pull and convert read; destinations validated at prepare).
   */
  private static List<Descriptors> buildWaves(Prepared p, BufferSet set, Set<String> kept) {
    TransferPlan plan = p.staging.wirePlan();
    List<PullSegment> exactSegments = plan.segments();
    if (!kept.isEmpty()) {
      exactSegments = new ArrayList<>();
      for (PullSegment s : plan.segments()) {
        if (!kept.contains(p.sourceIndex().sourceOf(s))) {
          exactSegments.add(s);
        }
      }
    }
    List<ReadDescriptor> exact =
        ReshardPlanner.descriptors(exactSegments, param -> set.params.get(param).address());
    List<ReadDescriptor> full = new ArrayList<>();
    for (FullPullSource f : plan.fullPulls()) {
      if (!kept.contains(f.srcName())) {
        full.addAll(
            ReshardPlanner.descriptors(f.segments(), src -> p.fullStaging.get(src).address()));
      }
    }
    List<ReadDescriptor> convert = new ArrayList<>();
    for (int i = 0; i < plan.converts().size(); i++) {
      List<PullSegment> segs = plan.converts().get(i).segments();
      if (!segs.isEmpty() && kept.contains(p.sourceIndex().sourceOf(segs.get(0)))) {
        continue;
      }
      long base = p.convertStaging.get(i).address();
      convert.addAll(ReshardPlanner.descriptors(segs, param -> base));
    }
    List<List<ReadDescriptor>> staged = new ArrayList<>();
    for (int w = 0; w < p.waveCount; w++) {
      staged.add(new ArrayList<>());
    }
    for (ShardStaging.Staged s : p.staging.staged()) {
      if (kept.contains(s.source())) {
        continue;
      }
      PullSegment seg = s.segment();
      staged
          .get(p.waveOf.getOrDefault(s.key(), 0))
          .add(
              new ReadDescriptor(
                  seg.session(),
                  seg.srcAddr(),
                  p.shardStaging.get(s.key()).address() + seg.dstByte(),
                  seg.nbytes()));
    }
    List<Descriptors> out = new ArrayList<>();
    for (int w = 0; w < p.waveCount; w++) {
      List<ReadDescriptor> verifiable = new ArrayList<>();
      List<ReadDescriptor> fullAndStaged = new ArrayList<>();
      List<ReadDescriptor> waveExact = List.of();
      List<ReadDescriptor> waveConvert = List.of();
      if (w == 0) {
        waveExact = exact;
        waveConvert = convert;
        verifiable.addAll(exact);
        verifiable.addAll(full);
        verifiable.addAll(convert);
        fullAndStaged.addAll(full);
      }
      fullAndStaged.addAll(staged.get(w));
      long bytes = 0;
      for (ReadDescriptor r : verifiable) {
        bytes += r.nbytes();
      }
      for (ReadDescriptor r : staged.get(w)) {
        bytes += r.nbytes();
      }
      out.add(
          new Descriptors(
              new WireGroups(waveExact, fullAndStaged, waveConvert),
              verifiable,
              waveExact.size() + fullAndStaged.size() + waveConvert.size(),
              bytes));
    }
    return out;
  }

  /**
   * The engine's live parameters as the receive buffers of an in-place refit, each checked against
   * the captured layout's size; also made resolvable for the verifier.
   */
  private Map<String, MemorySegment> livePlaces(Prepared p, Map<String, Long> sizes) {
    Map<String, MemorySegment> out = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : sizes.entrySet()) {
      MemorySegment live = inPlace.parameter(e.getKey());
      if (live.byteSize() != e.getValue()) {
        throw new IllegalArgumentException(
            "rank "
                + config.rank()
                + ": live parameter '"
                + e.getKey()
                + "' has "
                + live.byteSize()
                + " bytes, the captured layout "
                + e.getValue());
      }
      out.put(e.getKey(), live);
    }
    p.buffers.external(out.values());
    return java.util.Collections.unmodifiableMap(out);
  }

  /** Checks that every segment lands inside the buffer it names, so no read can write past it. */
  private static void validateDestinations(Prepared p, Map<String, MemorySegment> params) {
    TransferPlan plan = p.staging.wirePlan();
    for (PullSegment s : plan.segments()) {
      requireInside(s, params.get(s.paramName()), "parameter");
    }
    for (FullPullSource f : plan.fullPulls()) {
      for (PullSegment s : f.segments()) {
        requireInside(s, p.fullStaging.get(f.srcName()), "full-pull staging of");
      }
    }
    for (int i = 0; i < plan.converts().size(); i++) {
      for (PullSegment s : plan.converts().get(i).segments()) {
        requireInside(s, p.convertStaging.get(i), "convert staging of");
      }
    }
    for (ShardStaging.Staged s : p.staging.staged()) {
      requireInside(s.segment(), p.shardStaging.get(s.key()), "shard staging");
    }
  }

  private static void requireInside(PullSegment s, MemorySegment dst, String what) {
    if (dst == null || s.dstByte() + s.nbytes() > dst.byteSize()) {
      throw new IllegalArgumentException(
          "segment from session '"
              + s.session()
              + "' writes bytes ["
              + s.dstByte()
              + ", "
              + (s.dstByte() + s.nbytes())
              + ") of "
              + what
              + " '"
              + s.paramName()
              + "' of "
              + (dst == null ? "unknown" : Long.toString(dst.byteSize()))
              + " bytes");
    }
  }

  private static double seconds(long startNanos) {
    return (System.nanoTime() - startNanos) / 1e9;
  }

  private void ensureOpen() {
    if (closed) {
      throw new IllegalStateException("receiver rank " + config.rank() + " is closed");
    }
  }

  /** Releases worker threads, registrations and native memory (in reverse order); idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (prepared != null) {
      Prepared p = prepared;
      prepared = null;
      p.close();
    }
  }

  // ---------------------------------------------------------------- state

  /** One set of receive buffers with everything compiled against it. */
  private static final class BufferSet {
    final Map<String, MemorySegment> params;
    LocalCopies local;
    ShardVerifier verifier;
    List<Descriptors> cached;

    /** What these buffers hold, for delta refits. */
    final DeltaState delta;

    long descriptorCount;
    long bytes;

    BufferSet(Map<String, MemorySegment> params, DeltaState delta) {
      this.params = params;
      this.delta = delta;
    }
  }

  /** Everything a successful prepare produced; closed in reverse order of creation. */
  private static final class Prepared implements AutoCloseable {
    final DiscoveredSources found;
    final Capture capture;
    final TransferPlan plan;
    final ShardStaging.Result staging;
    final Coverage coverage;
    final Map<String, Double> prepareStages;
    final NativeBuffers buffers;
    Map<String, MemorySegment> fullStaging = Map.of();

    /** In place: where {@link #probePeers} reads, beside the live weights. */
    MemorySegment probe;

    Map<Integer, MemorySegment> convertStaging = Map.of();
    Map<String, MemorySegment> shardStaging = Map.of();

    /** The staging wave of each staged shard (by key); absent means wave 0. */
    final Map<String, Integer> waveOf = new LinkedHashMap<>();

    int waveCount = 1;
    long stagingBudget;
    final List<BufferSet> sets = new ArrayList<>();
    ExecutorService workers;
    int threads = 1;
    int sourcesExact;
    int sourcesStaged;
    int sourcesFull;

    /** The sources some copy of this receiver reads. */
    List<String> usedSources = List.of();

    private List<String> keepable;

    /**
     * The used sources a delta step may keep: not those replayed out of full-pull or convert
     * staging, which the re-slice and cast stages copy every step (and which another receiver
     * sharing the live weights may never have filled).
     */
    List<String> keepable() {
      if (keepable == null) {
        TransferPlan wire = staging.wirePlan();
        Set<String> replayed = new java.util.HashSet<>();
        wire.fullPulls().forEach(f -> replayed.add(f.srcName()));
        for (ConvertSource c : wire.converts()) {
          c.segments().forEach(seg -> replayed.add(sourceIndex().sourceOf(seg)));
        }
        for (ShardStaging.Staged st : staging.staged()) {
          if (!st.convertRuns().isEmpty()) {
            replayed.add(st.source());
          }
        }
        keepable = usedSources.stream().filter(n -> !replayed.contains(n)).toList();
      }
      return keepable;
    }

    private DeltaState.SourceIndex sourceIndex;

    /** Which source each read comes from (built on the first delta step). */
    DeltaState.SourceIndex sourceIndex() {
      if (sourceIndex == null) {
        sourceIndex = new DeltaState.SourceIndex(found.sources());
      }
      return sourceIndex;
    }

    Prepared(
        DiscoveredSources found,
        Capture capture,
        TransferPlan plan,
        ShardStaging.Result staging,
        Coverage coverage,
        Map<String, Double> prepareStages,
        MemoryOps device) {
      this.buffers = new NativeBuffers(device);
      this.found = found;
      this.capture = capture;
      this.plan = plan;
      this.staging = staging;
      this.coverage = coverage;
      this.prepareStages = prepareStages;
    }

    Map<String, Double> stages() {
      return prepareStages;
    }

    @Override
    public void close() {
      List<AutoCloseable> order = new ArrayList<>();
      for (int i = sets.size() - 1; i >= 0; i--) {
        order.add(sets.get(i).verifier);
      }
      if (workers != null) {
        ExecutorService w = workers;
        order.add(
            () -> {
              w.shutdown();
              if (!w.awaitTermination(30, TimeUnit.SECONDS)) {
                w.shutdownNow();
              }
            });
      }
      order.add(buffers);
      Closeables.closeAll(order);
    }
  }

  // ---------------------------------------------------------------- builder

  /**
   * Assembles a receiver; transport, discovery, geometry and installer are required, the rest has
   * defaults.
   */
  public static final class Builder {
    private ReceiverConfig config = ReceiverConfig.defaults();
    private Settings settings;
    private ReceiverContext context;
    private Transport transport;
    private SourceDiscovery discovery;
    private GeometrySource geometry;
    private Installer installer;
    private PlanBuilder planner;
    private PlanBuilder strictPlanner;
    private Supplier<WirePolicy> wirePolicy;
    private Supplier<DigestProvider> digests = () -> DigestProvider.registry().select();
    private boolean rediscoverEachStep;
    private boolean delta = true;
    private DeltaState sharedDelta;
    private RefitRecords records = RefitRecords.logging();
    private final List<RefitListener> listeners = new ArrayList<>();
    private MemoryKind memory = MemoryKind.HOST;
    private MemoryOps memoryOps;
    private InPlaceTarget inPlace;
    private long stagingBytes = -1;

    private Builder() {}

    /**
     * Write the engine's live weights in place instead of into receive buffers that the installer
     * copies: reads land in {@code target}'s parameters, staged shards are verified before they are
     * copied in, and only a bounded staging budget ({@link #stagingBytes}) is held beside them. A
     * step that fails after it began writing throws {@link TornInstallException} and tells {@code
     * target} ({@link InPlaceTarget#torn}). The installer is still called (last, with the live
     * parameters) once the step verified. The owner registers the live memory with the transport.
     */
    public Builder inPlace(InPlaceTarget target) {
      this.inPlace = target;
      return this;
    }

    /**
     * The staging budget in bytes (default {@link StagingWaves#PROPERTY} from the settings, else
     * {@link StagingWaves#DEFAULT_BYTES} or what the largest staged unit needs): staged shards
     * beyond it go in later waves of the same refit. A budget that cannot hold the largest unit
     * fails the prepare naming the unit and the bytes needed.
     */
    public Builder stagingBytes(long bytes) {
      this.stagingBytes = bytes;
      return this;
    }

    /**
     * Where receive buffers and staging live (default host). Device memory ({@code cuda:N}) takes
     * its allocation, re-slice, casts, staged copies and digests from the {@link MemoryOpsProvider}
     * serving it, and is registered with the transport under that kind (a transport that cannot
     * read it fails naming both).
     */
    public Builder memory(MemoryKind kind) {
      this.memory = Objects.requireNonNull(kind, "memory");
      return this;
    }

    /**
     * Memory operations to use for {@link #memory} instead of a provider's (their kind must equal
     * it).
     */
    public Builder memoryOps(MemoryOps ops) {
      this.memoryOps = ops;
      if (ops != null) {
        this.memory = ops.kind().isDevice() ? ops.kind() : this.memory;
      }
      return this;
    }

    public Builder config(ReceiverConfig c) {
      this.config = c;
      return this;
    }

    /**
     * Where the settings beyond {@link #config} ({@link ReceiverSetting}) are read when the
     * receiver is built; default the system properties and environment. Read once: a setting
     * changed later takes effect in the next receiver.
     */
    public Builder settings(Settings s) {
      this.settings = s;
      return this;
    }

    /**
     * A context concluded already, in place of {@link #config}, {@link #settings} and {@link
     * #stagingBytes} (its {@link ReceiverContext#inPlace()} must match {@link #inPlace}).
     */
    public Builder context(ReceiverContext c) {
      this.context = Objects.requireNonNull(c, "context");
      return this;
    }

    /** The context given, or {@link #config} concluded with {@link #settings}. */
    ReceiverContext concludedContext() {
      if (context != null) {
        return context;
      }
      ReceiverConfig c = Objects.requireNonNull(config, "config");
      if (stagingBytes > 0) {
        c = c.withStagingBytes(stagingBytes);
      }
      return settings == null
          ? ReceiverContext.conclude(c, inPlace != null)
          : ReceiverContext.conclude(c, settings, inPlace != null);
    }

    /**
     * The transport reads go through; the receiver registers its buffers with it but does not close
     * it.
     */
    public Builder transport(Transport t) {
      this.transport = t;
      return this;
    }

    public Builder discovery(SourceDiscovery d) {
      this.discovery = d;
      return this;
    }

    public Builder geometry(GeometrySource g) {
      this.geometry = g;
      return this;
    }

    public Builder installer(Installer i) {
      this.installer = i;
      return this;
    }

    /**
     * Adds a listener told about this receiver's refits (stages, bytes, verification, installs),
     * after {@link RefitListeners#jvmWide()} (the JFR events and JVM-wide registrations).
     */
    public Builder listener(RefitListener l) {
      listeners.add(Objects.requireNonNull(l, "listener"));
      return this;
    }

    /**
     * The planner for {@code whole-shards} and {@code off} verification; default a {@link
     * ReshardPlanner} reading the receiver's settings. A {@link ReshardPlanner} also provides
     * strict staged planning.
     */
    public Builder planner(PlanBuilder p) {
      this.planner = p;
      return this;
    }

    /**
     * The strict staged planner (ModelExpress; ARCHITECTURE §7.3) for {@code
     * mx.receiver.verify=strict}; default {@link ReshardPlanner#planStaged} when the planner is a
     * {@link ReshardPlanner}.
     */
    public Builder strictPlanner(PlanBuilder p) {
      this.strictPlanner = p;
      return this;
    }

    /** A fixed wire policy (default: the one {@link ReceiverConfig#wire()} names). */
    public Builder wirePolicy(WirePolicy w) {
      Objects.requireNonNull(w, "wirePolicy");
      this.wirePolicy = () -> w;
      return this;
    }

    /** A wire policy consulted at every refit (e.g. a Guice provider). */
    public Builder wirePolicy(Supplier<WirePolicy> w) {
      this.wirePolicy = w;
      return this;
    }

    /**
     * Whether a step keeps the sources the publishers claim unchanged ({@code changed_step}) since
     * the buffers were filled, reading only what changed (default on; takes effect with {@link
     * #rediscoverEachStep}, which brings each step's claims). A claim whose digest changed fails
     * the refit naming the tensor. Off: every step reads everything.
     */
    public Builder delta(boolean on) {
      this.delta = on;
      return this;
    }

    /**
     * What the live weights hold, for receivers that take turns writing the same {@link #inPlace}
     * target (one per trainer buffer set): each must see what the others installed, or forgot when
     * a step tore them. Without it, receivers of one in-place target share {@link
     * DeltaState#of(Object) its state}; receivers into their own buffers keep their own.
     */
    public Builder deltaState(DeltaState shared) {
      this.sharedDelta = Objects.requireNonNull(shared, "shared");
      return this;
    }

    /**
     * The digest used for verification; default the best {@link DigestProvider} on the class path,
     * resolved at the first verification.
     */
    /**
     * Re-read the publishers' tables before every warm step (default off, as in ModelExpress's
     * legacy receiver): takes each step's fresh digests, and re-plans when the geometry changed.
     */
    public Builder rediscoverEachStep(boolean on) {
      this.rediscoverEachStep = on;
      return this;
    }

    public Builder digests(Supplier<DigestProvider> d) {
      this.digests = d;
      return this;
    }

    public Builder digests(DigestProvider d) {
      Objects.requireNonNull(d, "digests");
      this.digests = () -> d;
      return this;
    }

    /**
     * Where coverage, stage and ceiling records go; default the {@code dev.mx.refit.records}
     * logger.
     */
    public Builder records(RefitRecords r) {
      this.records = r;
      return this;
    }

    /** Builds the receiver. Does no native work: memory is allocated by the first refit. */
    public Receiver build() {
      return new Receiver(this);
    }
  }
}
