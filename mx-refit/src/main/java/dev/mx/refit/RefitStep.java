package dev.mx.refit;

import dev.mx.api.digest.DigestProvider;
import dev.mx.api.error.TornInstallException;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.WirePolicy;
import dev.mx.api.transport.ReadDescriptor;
import dev.mx.refit.jfr.StageClock;
import dev.mx.refit.memory.OpsDigest;
import dev.mx.refit.stage.Descriptors;
import dev.mx.refit.stage.LandedWork;
import dev.mx.refit.stage.PipelinedWire;
import dev.mx.refit.stage.RefitReport;
import dev.mx.refit.stage.StagedWork;
import dev.mx.refit.stage.StagingReads;
import dev.mx.refit.verify.LandingDigest;
import dev.mx.refit.verify.LandingPlan;
import dev.mx.refit.verify.ShardVerifier;
import dev.mx.refit.wire.WireStages;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One refit step over a {@link PreparedPlan} (ModelExpress; ARCHITECTURE §7.4): {@link
 * DescriptorStage} (cached per buffer set) → the in-place peer probe → {@link PipelinedWire} (the
 * wire policy issuing every batch, with each peer's work — staged shards verified then copied,
 * digests of shards that landed whole — starting on the workers as soon as that peer's reads
 * landed) → {@link ThroughputCeiling} → re-slice of full pulls → casts → install → {@link
 * RefitReport}. Atomicity: the installer is called only after every step before it succeeded; in
 * place, a failure after the first write is reported as a torn step.
 */
final class RefitStep {
  private final ReceiverParts parts;
  private final ReceiverContext context;
  private final ReceiverConfig config;
  private final InPlaceTarget inPlace;

  /** The device memory operations (null for host memory), known once the first prepare ran. */
  private final Supplier<MemoryOps> device;

  private final AtomicLong descriptorBuilds = new AtomicLong();
  private DigestProvider digestProvider;

  RefitStep(ReceiverParts parts, Supplier<MemoryOps> device) {
    this.parts = parts;
    this.context = parts.context();
    this.config = context.config();
    this.inPlace = parts.inPlace();
    this.device = device;
  }

  /** A refit's report (for listeners) and the metrics map {@code updateWeights} returns. */
  record Refitted(RefitReport report, Map<String, Object> metrics) {}

  /** How many times refits built their descriptor lists (a cache hit builds nothing). */
  long descriptorBuilds() {
    return descriptorBuilds.get();
  }

  /**
   * Runs one refit into {@code set}.
   *
   * @param currentSources the publishers' tables of this step
   * @param sourceStep the publishers' step, or null
   */
  Refitted run(
      long step,
      PreparedPlan p,
      BufferSet set,
      Map<String, Double> stages,
      Map<String, SourceInfo> currentSources,
      Long sourceStep) {
    WirePolicy policy = parts.wirePolicy().get();
    // Delta: sources held unchanged in this buffer set are not read (checked before any read).
    Set<String> kept =
        parts.delta() ? set.delta.unchanged(currentSources, p.keepable().get()) : Set.of();
    // Descriptors: reuse while the plan is unchanged.
    StageClock descriptorBuildClock = StageClock.start("descriptor_build_s");
    boolean cache = context.cacheDescriptors();
    List<Descriptors> waves = set.cached;
    if (!kept.isEmpty()) {
      waves = p.descriptors().build(set.params, kept);
      descriptorBuilds.incrementAndGet();
    } else {
      if (!cache || waves == null) {
        waves = p.descriptors().build(set.params, Set.of());
        descriptorBuilds.incrementAndGet();
      }
      set.cached = cache ? waves : null;
    }
    descriptorBuildClock.stopInto(stages);
    long bytes = 0;
    long segments = 0;
    // Which publishers serve this step, and how much each: replica spreading shows here.
    Map<String, Long> bytesBySession = new java.util.TreeMap<>();
    for (Descriptors d : waves) {
      bytes += d.bytes();
      segments += d.segments();
      d.bytesPerSession().forEach((s, n) -> bytesBySession.merge(s, n, Long::sum));
    }

    // In place, the live weights are written from the first read on: a failure after this point
    // leaves them torn until restored or refitted. A publisher already dead (or stopped, where the
    // transport needs it) fails the probe, before that point.
    if (inPlace != null) {
      probePeers(p.probe(), waves);
      inPlace.writing(step);
    }
    AtomicInteger verified = new AtomicInteger();
    boolean batch = context.batchInstall();
    try {
      Map<String, Double> wire = new LinkedHashMap<>();
      StageClock wireClock = StageClock.start("wire_s");
      try {
        runWaves(policy, p, set, waves, verified, kept, wire);
      } catch (RuntimeException failed) {
        // A refit failing on the wire (a digest mismatch, a dead peer) still accounts for the time
        // it spent there: the listeners get it as the failed refit's wire_s.
        wireClock.stopInto(stages);
        throw failed;
      }
      if (waves.size() > 1) {
        stages.put("staging_waves", (double) waves.size());
      }
      stages.putAll(wire);
      ThroughputCeiling.check(context.maxGbps(), parts.records(), config.rank(), step, bytes, wire);

      if (set.local.resliceCount() > 0) {
        StageClock resliceClock = StageClock.start("reslice_s");
        set.local.reslice(batch, p.workers(), p.threads());
        resliceClock.stopInto(stages);
        stages.put("reslice_copies", (double) set.local.resliceCount());
      }
      if (set.local.convertCount() > 0) {
        StageClock convertClock = StageClock.start("convert_s");
        set.local.casts(batch, p.workers(), p.threads());
        convertClock.stopInto(stages);
      }
      // Install: only now does the engine see anything (in place: only now is the step whole).
      StageClock installClock = StageClock.start("install_s");
      parts.installer().install(step, set.params);
      if (inPlace != null && parts.installer() != inPlace) {
        inPlace.installed(step);
      }
      installClock.stopInto(stages);
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
    if (parts.delta()) {
      set.delta.installed(currentSources, p.usedSources());
    } else {
      // Shared with other receivers of the same live weights: what it held is overwritten now.
      set.delta.forget();
    }
    ShardVerifier.Outcome outcome =
        new ShardVerifier.Outcome(
            verified.get(),
            config.verify() == VerifyMode.OFF ? 0 : set.verifier.unverifiableCount());
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
            p.plan(),
            set.local.staged().size(),
            p.sourcesExact(),
            p.sourcesStaged(),
            p.sourcesFull(),
            outcome.verified(),
            config.verify() == VerifyMode.OFF ? 0 : outcome.unverifiable() + stagedUnverified,
            unverifiedBytes,
            config.verify().label(),
            sourceStep == null ? -1 : sourceStep,
            bytesBySession,
            stages);
    if (context.stageRecord()) {
      report.emit(
          parts.records(),
          context.stageRecordLevel(),
          config.rank(),
          stages.containsKey(WireStages.FUSED),
          batch);
    }
    Map<String, Object> metrics = new LinkedHashMap<>(report.metrics());
    metrics.put("delta_kept_sources", (long) kept.size());
    metrics.put("delta_kept_bytes", kept.isEmpty() ? 0L : Math.max(0, set.bytes - bytes));
    return new Refitted(report, Collections.unmodifiableMap(metrics));
  }

  /** A wave's per-peer work and the work bound to its reads ({@link PipelinedWire#run}). */
  private record WaveWork(
      Map<String, List<Runnable>> work, Map<ReadDescriptor, ? extends LandedWork> onLanded) {}

  /**
   * The work of wave {@code wave} that depends only on one peer's reads: each of its staged shards
   * (verify, then copy) and, in wave 0, each whole-shard and tile digest check. Where the digest
   * combines pieces, a digest goes piece by piece into the wave's landing plan, keyed by the read
   * that lands it, to ride on that read's copy; a staged shard whose staging the wave's reads fill
   * exactly is verified so, and replayed into place by a worker once it verified. The plan is kept
   * on the buffer set while its reads hold. The digest provider is resolved only when something is
   * digested.
   */
  private WaveWork perPeerWork(
      BufferSet set,
      Descriptors reads,
      Map<String, Integer> waveOf,
      int wave,
      AtomicInteger verified,
      Set<String> kept) {
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
    boolean stagedVerify = false;
    for (StagedWork w : staged) {
      stagedVerify |= w.verifies();
    }
    DigestProvider dp = checks || stagedVerify ? digestProvider() : null;
    if (dp == null) {
      staged.forEach(w -> addStaged(work, w, null, verified));
      return new WaveWork(work, Map.of());
    }
    BufferSet.WaveLanding landing = set.landings.get(wave);
    if (landing == null || !landing.holdsFor(reads, kept, dp, checks)) {
      landing = planLanding(set, reads, staged, stagedVerify, checks, dp, kept);
      set.landings.put(wave, landing);
    }
    Map<ReadDescriptor, LandedWork> onLanded = landing.plan().renew(dp, verified);
    landing.unfusedStaged().forEach(w -> addStaged(work, w, dp, verified));
    if (checks) {
      set.verifier
          .wholeWork(dp, verified, landing.wholeChecks())
          .forEach((s, l) -> work.computeIfAbsent(s, k -> new ArrayList<>()).addAll(l));
    }
    return new WaveWork(work, onLanded);
  }

  /**
   * Plans which digests a wave's reads assemble where they land: built at the first refit of these
   * reads and kept for the next ones (only the accumulators are renewed).
   */
  private BufferSet.WaveLanding planLanding(
      BufferSet set,
      Descriptors reads,
      List<StagedWork> staged,
      boolean stagedVerify,
      boolean checks,
      DigestProvider dp,
      Set<String> kept) {
    LandingPlan plan = new LandingPlan();
    // Only a wave with staged shards to verify looks up which reads fill their staging.
    StagingReads filling = stagedVerify && device.get() == null ? StagingReads.of(reads) : null;
    List<StagedWork> unfused = new ArrayList<>();
    for (StagedWork w : staged) {
      if (!(w.verifies() && filling != null && landStaged(w, dp, filling, plan))) {
        unfused.add(w);
      }
    }
    int[] whole = checks ? set.verifier.planLanding(dp, kept, plan) : new int[0];
    return new BufferSet.WaveLanding(
        reads, Set.copyOf(kept), dp, checks, plan, List.copyOf(unfused), whole);
  }

  /** A staged shard verified (when it verifies) and copied out of staging once its peer landed. */
  private static void addStaged(
      Map<String, List<Runnable>> work, StagedWork w, DigestProvider dp, AtomicInteger verified) {
    work.computeIfAbsent(w.session(), k -> new ArrayList<>())
        .add(
            () -> {
              w.run(dp);
              if (w.verifies()) {
                verified.incrementAndGet();
              }
            });
  }

  /**
   * Puts a staged shard's digest on the reads that fill its staging (when they fill it exactly, and
   * the provider combines pieces); returns whether it did.
   */
  private static boolean landStaged(
      StagedWork w, DigestProvider dp, StagingReads filling, LandingPlan plan) {
    MemorySegment staging = w.staging();
    List<ReadDescriptor> fill = filling.filling(staging.address(), staging.byteSize());
    if (fill == null || staging.byteSize() == 0 || dp.parts(staging.byteSize()).isEmpty()) {
      return false;
    }
    LandingDigest digest = plan.region(staging.byteSize(), w::requireDigest, w::replay);
    for (ReadDescriptor r : fill) {
      long at = r.dstAddr() - staging.address();
      plan.add(r, 0, at, staging.asSlice(at, r.nbytes()), digest);
    }
    return true;
  }

  private synchronized DigestProvider digestProvider() {
    if (digestProvider == null) {
      // Device buffers are digested where they are: the CPU must not read them.
      digestProvider = device.get() != null ? new OpsDigest(device.get()) : parts.digests().get();
    }
    return digestProvider;
  }

  /**
   * One small read from every peer the step reads, into the probe buffer (staging, idle until the
   * wire starts, or a page of its own), never the live weights: a publisher that died since it
   * published, or stopped where the transport needs it to serve (ucx), fails the step here, naming
   * it, with the live weights untouched. One round trip for up to a probe buffer's worth of peers
   * at once, more rounds beyond.
   */
  /**
   * The wire, wave by wave (staged shards beyond the staging budget wait for the next wave), each
   * peer's verification and staged copies starting as soon as that peer landed; its stage times go
   * into {@code wire}.
   */
  private void runWaves(
      WirePolicy policy,
      PreparedPlan p,
      BufferSet set,
      List<Descriptors> waves,
      AtomicInteger verified,
      Set<String> kept,
      Map<String, Double> wire) {
    for (int w = 0; w < waves.size(); w++) {
      WaveWork ww = perPeerWork(set, waves.get(w), p.descriptors().waveOf(), w, verified, kept);
      PipelinedWire.run(
              policy,
              parts.transport(),
              waves.get(w),
              ww.work(),
              ww.onLanded(),
              p.workers(),
              config.timeout(),
              context.pipeline(),
              context.landingBytes(),
              context.landingDigestOnWire())
          .forEach((k, v) -> wire.merge(k, v, Double::sum));
    }
  }

  private void probePeers(MemorySegment probe, List<Descriptors> waves) {
    Map<String, ReadDescriptor> first = new LinkedHashMap<>();
    for (Descriptors d : waves) {
      d.firstReadPerSession().forEach(first::putIfAbsent);
    }
    int slots = (int) (probe.byteSize() / Preparation.PROBE_BYTES);
    List<ReadDescriptor> probes = new ArrayList<>(Math.min(slots, first.size()));
    for (ReadDescriptor r : first.values()) {
      probes.add(
          new ReadDescriptor(
              r.session(),
              r.srcAddr(),
              probe.address() + (long) Preparation.PROBE_BYTES * probes.size(),
              Math.min(Preparation.PROBE_BYTES, r.nbytes())));
      if (probes.size() == slots) {
        parts.transport().read(probes, config.timeout());
        probes.clear();
      }
    }
    if (!probes.isEmpty()) {
      parts.transport().read(probes, config.timeout());
    }
  }
}
