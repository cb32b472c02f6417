package dev.mx.refit;

import dev.mx.api.error.MxException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.ConvertSource;
import dev.mx.api.plan.FullPullSource;
import dev.mx.api.plan.PlanBuilder;
import dev.mx.api.plan.PullSegment;
import dev.mx.api.plan.RecordedCopy;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.refit.Capture;
import dev.mx.api.refit.ManifestEntry;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.Transport;
import dev.mx.plan.ReshardPlanner;
import dev.mx.refit.jfr.StageClock;
import dev.mx.refit.stage.ConvertMatch;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.ElementCoverage;
import dev.mx.refit.stage.LocalCopies;
import dev.mx.refit.stage.PlanGates;
import dev.mx.refit.stage.ShardStaging;
import dev.mx.refit.stage.SourceChecks;
import dev.mx.refit.stage.StagingWaves;
import dev.mx.refit.verify.ShardVerifier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prepare stage (ModelExpress; ARCHITECTURE §7.4): discover ({@link SourceChecks}: every
 * source's shards tile its shape) → capture the engine's geometry → plan → coverage record and the
 * {@link ElementCoverage} gate (every parameter element written exactly once) → {@link
 * ShardStaging} (which shards land whole in staging to be verified) → connect peers → allocate and
 * register buffers once → compile {@link LocalCopies} and the {@link ShardVerifier} per set of
 * receive buffers. Returns an immutable {@link PreparedPlan}; on failure releases what it made.
 */
final class Preparation {
  private static final Logger LOG = LoggerFactory.getLogger(Receiver.class);

  /** Bytes the probe reads from each peer, and the most peers one probe round reaches. */
  static final int PROBE_BYTES = 8;

  static final int PROBE_PEERS = 512;

  private final ReceiverParts parts;
  private final ReceiverConfig config;
  private final MemoryOps device;

  /**
   * @param device the device memory operations, or null for host memory
   */
  Preparation(ReceiverParts parts, MemoryOps device) {
    this.parts = parts;
    this.config = parts.context().config();
    this.device = device;
  }

  PreparedPlan prepare() {
    Map<String, Double> stages = new LinkedHashMap<>();
    StageClock discoverClock = StageClock.start("prepare_discover_s");
    DiscoveredSources found =
        spread(parts.discovery().discover(config.timeout()), config.rank(), parts.transport());
    SourceChecks.requireTiled(found.sources());
    discoverClock.stopInto(stages);

    StageClock captureClock = StageClock.start("prepare_capture_s");
    List<ManifestEntry> manifest = new ArrayList<>();
    found
        .sources()
        .forEach(
            (name, info) ->
                manifest.add(new ManifestEntry(name, info.dtype(), info.globalShape())));
    Capture capture = parts.geometry().capture(manifest);
    captureClock.stopInto(stages);

    StageClock planClock = StageClock.start("prepare_plan_s");
    TransferPlan plan = plan(capture, found);
    planClock.stopInto(stages);

    Coverage coverage = Coverage.of(config.rank(), capture.result(), capture.paramLayout(), plan);
    coverage.emit(parts.records());
    coverage.gate(parts.context());
    PlanGates.rejectFallback(plan, capture);
    if (config.verify() == VerifyMode.STRICT) {
      PlanGates.requireComplete(capture, coverage);
    }
    StageClock coverageClock = StageClock.start("prepare_coverage_s");
    ElementCoverage.check(capture, found.sources(), plan);
    coverageClock.stopInto(stages);

    ShardStaging.Result staging =
        ShardStaging.apply(plan, found.sources(), config.verify() == VerifyMode.ALL);
    PlanGates.requireStagedDigests(config.verify(), staging);

    StageClock handshakeClock = StageClock.start("prepare_handshake_s");
    PlanGates.connectPeers(parts.transport(), plan, found.peerMetadata());
    handshakeClock.stopInto(stages);

    NativeBuffers buffers = new NativeBuffers(device);
    Allocated a = new Allocated(buffers);
    try {
      PreparedPlan p = allocate(found, capture, plan, staging, coverage, stages, a);
      log(p);
      return p;
    } catch (RuntimeException e) {
      try {
        PreparedPlan.closeAll(a.sets, a.workers, buffers);
      } catch (RuntimeException closeFailure) {
        e.addSuppressed(closeFailure);
      }
      throw e;
    }
  }

  /**
   * The sources receiver {@code rank} reads, each box from one holder among its owner and replicas
   * (spread so trainer ranks serve balanced bytes). A holder is probed by connecting to it: one
   * that cannot be reached is skipped and its share goes to the live replicas.
   */
  static DiscoveredSources spread(DiscoveredSources all, int rank, Transport transport) {
    Map<String, Boolean> reachable = new java.util.HashMap<>();
    return all.spreadFor(
        rank,
        session ->
            reachable.computeIfAbsent(
                session, s -> connects(s, all.peerMetadata().get(s), rank, transport)));
  }

  private static boolean connects(String session, byte[] meta, int rank, Transport transport) {
    if (transport.isConnected(session)) {
      return true;
    }
    if (meta == null) {
      LOG.warn("rank {}: publisher '{}' has no peer metadata; reading its replicas", rank, session);
      return false;
    }
    try {
      transport.connect(session, meta);
      return true;
    } catch (MxException e) {
      LOG.warn(
          "rank {}: publisher '{}' is unreachable, reading its replicas: {}", rank, session, e);
      return false;
    }
  }

  /** What allocation made so far, released if a later step fails. */
  private static final class Allocated {
    final NativeBuffers buffers;
    final List<BufferSet> sets = new ArrayList<>();
    ExecutorService workers;

    Allocated(NativeBuffers buffers) {
      this.buffers = buffers;
    }
  }

  private TransferPlan plan(Capture capture, DiscoveredSources found) {
    int maxSegments = parts.context().maxSegmentsPerCopy();
    PlanBuilder builder =
        config.verify() == VerifyMode.STRICT ? parts.strictPlanner() : parts.planner();
    if (builder == parts.planner()
        && parts.planner() instanceof ReshardPlanner rp
        && config.bounding() == BoundingMode.SHARD) {
      // Shard bounding: a cost model (with this transport's declared costs) picks exact, staged or
      // full pull.
      return rp.plan(
          capture.result(), found.sources(), parts.context().planOptions(parts.transport()));
    }
    return builder.plan(capture.result(), found.sources(), maxSegments);
  }

  private PreparedPlan allocate(
      DiscoveredSources found,
      Capture capture,
      TransferPlan plan,
      ShardStaging.Result staging,
      Coverage coverage,
      Map<String, Double> stages,
      Allocated a) {
    StageClock allocClock = StageClock.start("prepare_alloc_s");
    NativeBuffers buffers = a.buffers;
    Map<String, ParamSpec> layout = capture.paramLayout();
    TransferPlan wirePlan = staging.wirePlan();
    Map<String, Long> paramSizes = new LinkedHashMap<>();
    for (String param :
        new TreeSet<>(capture.result().copies().stream().map(RecordedCopy::paramName).toList())) {
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
            staging.staged(), held, largestHeld, parts.context().stagingBytes(), config.rank());
    List<Map<String, MemorySegment>> receive = new ArrayList<>();
    if (parts.inPlace() != null) {
      receive.add(livePlaces(buffers, paramSizes));
    } else {
      int setCount = config.doubleBuffer() ? 2 : 1;
      for (int s = 0; s < setCount; s++) {
        receive.add(buffers.carve(paramSizes));
      }
    }
    Map<String, MemorySegment> fullStaging = buffers.carve(fullSizes);
    Map<Integer, MemorySegment> convertStaging = buffers.carve(convertSizes);
    Map<String, MemorySegment> shardStaging = new LinkedHashMap<>();
    Map<String, Integer> waveOf = new LinkedHashMap<>();
    // Staging the engine set aside with its live weights (registered with them), when it fits.
    MemorySegment reserved =
        parts.inPlace() == null ? MemorySegment.NULL : parts.inPlace().staging();
    if (reserved.byteSize() > 0) {
      buffers.external(List.of(reserved));
    }
    MemorySegment slab = null;
    if (waves.waveBytes() > 0) {
      slab = reserved.byteSize() >= waves.waveBytes() ? reserved : buffers.slab(waves.waveBytes());
      for (int w = 0; w < waves.waves().size(); w++) {
        Map<String, Long> sizes = new LinkedHashMap<>();
        for (ShardStaging.Staged s : waves.waves().get(w)) {
          sizes.put(s.key(), s.stagingBytes());
          waveOf.put(s.key(), w);
        }
        shardStaging.putAll(Slabs.carve(slab, sizes));
      }
    }
    MemorySegment probe = null;
    if (parts.inPlace() != null) {
      // The probe lands where staged shards will, idle until the wire starts; else in its own page.
      long bytes = (long) PROBE_BYTES * Math.clamp(found.peerMetadata().size(), 1, PROBE_PEERS);
      MemorySegment at =
          slab != null && slab.byteSize() >= bytes
              ? slab
              : reserved.byteSize() >= bytes ? reserved : buffers.slab(bytes);
      probe = at.asSlice(0, bytes);
    }
    allocClock.stopInto(stages);

    StageClock registerClock = StageClock.start("prepare_register_s");
    buffers.registerAll(parts.transport());
    registerClock.stopInto(stages);

    int threads = config.effectiveThreads();
    if (threads > 1) {
      a.workers = Executors.newFixedThreadPool(threads, workerThreads(config.rank()));
    }
    Set<String> used = new LinkedHashSet<>();
    for (RecordedCopy c : capture.result().copies()) {
      if (found.sources().containsKey(c.srcName())) {
        used.add(c.srcName());
      }
    }
    Set<String> staged = new LinkedHashSet<>();
    staging.staged().forEach(s -> staged.add(s.source()));
    Set<String> full = new LinkedHashSet<>();
    wirePlan.fullPulls().forEach(f -> full.add(f.srcName()));
    int sourcesExact =
        (int) used.stream().filter(s -> !staged.contains(s) && !full.contains(s)).count();

    PreparedPlan.Lazy<DeltaState.SourceIndex> sourceIndex = PreparedPlan.sourceIndexOf(found);
    DescriptorStage descriptors =
        new DescriptorStage(
            staging,
            Collections.unmodifiableMap(fullStaging),
            Collections.unmodifiableMap(convertStaging),
            Collections.unmodifiableMap(shardStaging),
            Collections.unmodifiableMap(waveOf),
            waves.waves().size(),
            sourceIndex);
    List<ConvertMatch.Target> targets = ConvertMatch.match(capture, found.sources(), plan);
    VerifyMode mode = config.verify();
    for (Map<String, MemorySegment> params : receive) {
      validateDestinations(descriptors, params);
      LocalCopies local =
          LocalCopies.compile(
              staging,
              targets,
              layout,
              new LocalCopies.Buffers(params, fullStaging, convertStaging, shardStaging),
              s -> mode != VerifyMode.OFF && s.shard().digest() != null,
              device);
      List<Descriptors> ds = descriptors.build(params, Set.of());
      long descriptorCount = 0;
      long bytes = 0;
      for (Descriptors d : ds) {
        descriptorCount += d.segments();
        bytes += d.bytes();
      }
      ShardVerifier verifier =
          ShardVerifier.plan(
              mode,
              found.sources(),
              used,
              ds.get(0).verifiable(),
              buffers::resolve,
              threads,
              device);
      DeltaState delta =
          parts.inPlace() == null
              ? new DeltaState()
              : parts.sharedDelta() != null ? parts.sharedDelta() : DeltaState.of(parts.inPlace());
      a.sets.add(new BufferSet(params, local, verifier, delta, descriptorCount, bytes));
    }
    List<String> usedSources = List.copyOf(used);
    return new PreparedPlan(
        found,
        capture,
        plan,
        staging,
        coverage,
        stages,
        buffers,
        descriptors,
        List.copyOf(a.sets),
        probe,
        waves.budget(),
        a.workers,
        threads,
        sourcesExact,
        staged.size(),
        full.size(),
        usedSources,
        sourceIndex,
        PreparedPlan.keepableOf(staging, usedSources, sourceIndex));
  }

  private void log(PreparedPlan p) {
    BufferSet first = p.sets().get(0);
    LOG.info(
        String.format(
            Locale.ROOT,
            "rank %d prepared: %d descriptor(s) (%d exact before bounding), sources %d exact / %d shard-staged"
                + " (%d shard(s), %d staged here for verification) / %d full-pulled, %d convert(s), %.1f MB per pull,"
                + " %.1f MB extra wire, %d unbounded, %d fallback; verify %s: %d shard check(s), %d unverifiable,"
                + " %s wire, %.1f MB native (%s, staging budget %.1f MB, %d wave(s))",
            config.rank(),
            first.descriptorCount,
            p.plan().exactDescriptorCount(),
            p.sourcesExact(),
            p.sourcesStaged(),
            p.staging().staged().size(),
            p.staging().restaged(),
            p.sourcesFull(),
            p.plan().converts().size(),
            first.bytes / 1e6,
            Math.max(0, first.bytes - p.plan().exactBytes()) / 1e6,
            p.plan().unboundedSources().size(),
            p.plan().fallback().size(),
            config.verify().label(),
            first.verifier.checkCount(),
            first.verifier.unverifiableCount(),
            parts.wirePolicy().get().name(),
            p.buffers().bytes() / 1e6,
            parts.inPlace() != null ? "in place" : "receive buffers",
            p.stagingBudget() / 1e6,
            p.descriptors().waveCount()));
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
   * The engine's live parameters as the receive buffers of an in-place refit, each checked against
   * the captured layout's size; also made resolvable for the verifier.
   */
  private Map<String, MemorySegment> livePlaces(NativeBuffers buffers, Map<String, Long> sizes) {
    Map<String, MemorySegment> out = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : sizes.entrySet()) {
      MemorySegment live = parts.inPlace().parameter(e.getKey());
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
    buffers.external(out.values());
    return Collections.unmodifiableMap(out);
  }

  /** Checks that every segment lands inside the buffer it names, so no read can write past it. */
  private static void validateDestinations(DescriptorStage d, Map<String, MemorySegment> params) {
    TransferPlan plan = d.staging().wirePlan();
    for (PullSegment s : plan.segments()) {
      requireInside(s, params.get(s.paramName()), "parameter");
    }
    for (FullPullSource f : plan.fullPulls()) {
      for (PullSegment s : f.segments()) {
        requireInside(s, d.fullStaging().get(f.srcName()), "full-pull staging of");
      }
    }
    for (int i = 0; i < plan.converts().size(); i++) {
      for (PullSegment s : plan.converts().get(i).segments()) {
        requireInside(s, d.convertStaging().get(i), "convert staging of");
      }
    }
    for (ShardStaging.Staged s : d.staging().staged()) {
      requireInside(s.segment(), d.shardStaging().get(s.key()), "shard staging");
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
}
