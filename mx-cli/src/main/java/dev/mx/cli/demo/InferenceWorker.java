package dev.mx.cli.demo;

import dev.mx.api.error.DiscoveryTimeoutException;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.RoutingTransport;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.metadata.Discovery;
import dev.mx.metadata.MetadataStores;
import dev.mx.plan.merge.MergedSources;
import dev.mx.plan.merge.ReplicaMerge;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.SourceDiscovery;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.stage.DeltaState;
import dev.mx.refit.version.VersionFollower;
import dev.mx.transport.shm.ShmTransport;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One vLLM inference rank: its parameters in vLLM's layout as live weights, and a {@link Receiver}
 * that pulls each step from the trainers, verifies it and stages it until the orchestrator commits
 * it.
 *
 * <p>With weight versions ({@code mx demo}) a {@link VersionFollower} drives the receiver: it waits
 * until the step's version is READY (every trainer rank's slot landed), leases it so that no
 * trainer reuses that memory while it is read, checks each table's SHA-256 and declared topology,
 * and only then refits (docs/VERSIONS.md). Without ({@code mx receive}), the receiver discovers the
 * publishers' current tables.
 */
final class InferenceWorker implements Worker {
  private final WorkerSpec spec;
  private final boolean versions;
  private Transport transport;
  private MetadataStore store;
  private LiveWeights live;
  private EngineWeights engine;
  private StagedInstall staged;
  private Receiver receiver;
  private VersionFollower follower;

  /** Whether the receivers write {@link #live} in place (weight versions, host memory). */
  private boolean inPlace;

  private final Set<String> knownPublishers = new LinkedHashSet<>();

  /**
   * What {@link #live} holds, shared by the receivers of both trainer buffer sets that write it in
   * place (delta refits).
   */
  private final DeltaState liveHolds = new DeltaState();

  /**
   * Whether {@link #start} warms up in the background: the kernels ({@code KernelWarmup}) and a
   * rehearsed refit ({@link RefitRehearsal}).
   */
  private final boolean rehearse;

  InferenceWorker(WorkerSpec spec, boolean versions) {
    this(spec, versions, true);
  }

  /**
   * As {@link #InferenceWorker(WorkerSpec, boolean)}; the rehearsal's own receiver does not warm
   * up.
   */
  InferenceWorker(WorkerSpec spec, boolean versions, boolean rehearse) {
    this.spec = spec;
    this.versions = versions;
    this.rehearse = rehearse;
  }

  @Override
  public Map<String, Object> start() {
    if (rehearse && !spec.memoryKind().isDevice()) {
      // While the trainers write their first step: the first refit then runs at warm speed.
      dev.mx.refit.KernelWarmup.inBackground(dev.mx.api.digest.DigestProvider.registry().select());
      if (versions) {
        RefitRehearsal.inBackground(spec);
      }
    }
    transport = Workers.transport(spec, "receiver-" + spec.rank());
    store = MetadataStores.open(spec.metadata());
    dev.mx.api.transport.MemoryKind memory = spec.memoryKind();
    engine = EngineWeights.create(spec, memory.isDevice() ? DeviceCheck.ops(memory) : null);
    VllmLayout geometry = engine.geometry();
    live = engine.live();
    staged = new StagedInstall();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("rank", spec.rank());
    out.put("params", geometry.params().size());
    if (versions) {
      // In place (host memory): the receivers write the live weights themselves, registered once
      // with the transport; restoring a torn step needs the trainers' second buffer set.
      // Quantizing installs write other bytes than the receivers pull: never in place.
      inPlace = spec.inPlace() && !memory.isDevice() && engine.fp8() == null;
      boolean restore = inPlace && spec.trainerSets() == 2;
      if (inPlace) {
        live.registerWith(transport);
      }
      out.put("install", inPlace ? "in-place" : "copy");
      follower =
          VersionFollower.builder(store, spec.identity())
              .holder("receiver-" + spec.rank())
              // The publishers must be the trainer job this rank expects: ranks 0..N-1 declaring
              // our topology.
              .expect(expectation())
              // A failed step fails the demo (fail closed): no second try of the same version.
              .maxAttempts(1)
              .pollInterval(Duration.ofMillis(20))
              // Waits for a version last while the trainer ranks progress; a stalled one fails the
              // step.
              .stallLimit(Workers.stallLimit(spec))
              .installer(inPlace ? live : staged)
              // Reconnects a restarted trainer; a killed one's memory is read for a restore where
              // it outlives it (shm).
              .transport(transport)
              .restorePrevious(restore)
              .holdUntilCommit(restore)
              // One receiver per trainer buffer set, each used every other step: its receive
              // buffers are free
              // again (committed) by the time it runs next, so double buffers would only cost
              // memory.
              .receivers(
                  (discovery, installer) ->
                      newReceiver(geometry, discovery, installer, false, inPlace ? live : null))
              .build();
      return out;
    }
    receiver = newReceiver(geometry, this::discover, staged, true, null);
    receiver.prepare();
    out.put("descriptors", receiver.plan().descriptorCount());
    out.put("bytes_planned", receiver.plan().bytesPlanned());
    return out;
  }

  private Receiver newReceiver(
      VllmLayout geometry,
      SourceDiscovery discovery,
      Installer installer,
      boolean doubleBuffer,
      LiveWeights inPlaceTarget) {
    return Receiver.builder()
        .config(
            ReceiverConfig.defaults()
                .withWire(spec.wire())
                .withVerify(VerifyMode.parse(spec.verify()))
                .withRank(spec.rank())
                .withTimeout(Workers.readTimeout(spec))
                .withDoubleBuffer(doubleBuffer)
                // shard bounding unless -Dmx.receiver.bounding / MX_RESHARD_BOUNDING says
                // modelexpress
                .withBounding(
                    dev.mx.api.plan.BoundingMode.fromSettings(
                        dev.mx.api.util.Settings.system(), dev.mx.api.plan.BoundingMode.SHARD)))
        .transport(transport)
        .discovery(discovery)
        .geometry(geometry)
        .installer(installer)
        .memory(spec.memoryKind())
        .inPlace(inPlaceTarget)
        .stagingBytes(spec.stagingBytes())
        .rediscoverEachStep(true)
        .delta(!spec.noDelta())
        .deltaState(liveHolds)
        .build();
  }

  private Discovery.Expectation expectation() {
    return new Discovery.Expectation(
        spec.trainerWorldSize(), Workers.trainerTopology(spec).toString());
  }

  /**
   * Exactly the expected number of READY trainer tables, merged; a publisher that went quiet is
   * named.
   */
  private DiscoveredSources discover(Duration timeout) {
    Duration freshness = Workers.seconds(spec.heartbeatSeconds() * 3);
    Discovery.Consistent job;
    try {
      // One consistent job: the publishers' declared topology must be ours, ranks 0..N-1 once, one
      // step.
      job =
          Discovery.on(store)
              .withFreshness(freshness)
              .withPollInterval(Duration.ofMillis(100))
              .awaitConsistent(spec.identity(), expectation(), timeout);
    } catch (DiscoveryTimeoutException e) {
      Set<String> ready = new LinkedHashSet<>();
      for (SourceRecord r : store.listReady(spec.identity(), freshness)) {
        ready.add(r.workerId());
      }
      Set<String> missing = new LinkedHashSet<>(knownPublishers);
      missing.removeAll(ready);
      if (!missing.isEmpty()) {
        throw new MxException(
            "receiver "
                + spec.rank()
                + ": publisher(s) "
                + String.join(", ", missing)
                + " stopped heartbeating READY (no heartbeat within "
                + freshness.toSeconds()
                + " s); "
                + e.getMessage(),
            e);
      }
      throw e;
    }
    List<ShardTable> tables = job.tables();
    MergedSources merged = ReplicaMerge.merge(tables);
    Map<String, byte[]> peers = new LinkedHashMap<>();
    for (ShardTable t : tables) {
      peers.put(t.agentName(), t.agentMetadata());
      knownPublishers.add(t.agentName());
    }
    return new DiscoveredSources(merged.sources(), peers, job.step());
  }

  /**
   * Refits {@code step}. With versions: waits until its version is READY, then refits under a
   * lease. The end-to-end time counts from when the version was picked (not the wait for the
   * trainers to publish it), and, as without versions where {@link #start} prepares, leaves out the
   * one-time preparation of a receiver (its {@code prepare_*} stages): the follower prepares one
   * per trainer buffer set on that set's first step.
   */
  @Override
  public Map<String, Object> step(long step) {
    long t0 = System.nanoTime();
    Map<String, Object> m;
    double notRefit = 0;
    if (versions) {
      VersionFollower.Followed f = follower.followStep(step, Workers.cap(spec));
      m = new LinkedHashMap<>(f.metrics());
      notRefit = m.get("version_wait_s") instanceof Number n ? n.doubleValue() : 0;
      for (Map.Entry<String, Object> e : f.metrics().entrySet()) {
        if (e.getKey().startsWith("prepare_")
            && e.getKey().endsWith("_s")
            && e.getValue() instanceof Number n) {
          notRefit += n.doubleValue();
        }
      }
      m.put("version_step", f.step());
    } else {
      m = new LinkedHashMap<>(receiver.updateWeights(step));
      m.put("coverage", receiver.coverage().coverage());
    }
    double e2e = (System.nanoTime() - t0) / 1e9 - notRefit;
    double wire = 0;
    for (Map.Entry<String, Object> e : m.entrySet()) {
      if (e.getKey().startsWith("wire_")
          && e.getKey().endsWith("_s")
          && e.getValue() instanceof Number n) {
        wire += n.doubleValue();
      }
    }
    m.put("wire_s", wire);
    m.put("e2e_s", e2e);
    ShmTransport shm = shmOf(transport);
    if (shm != null) {
      // Cumulative: which shm path the trainers' memory was read by (mapped = allocated, memory
      // speed).
      m.put("shm_mapped_bytes", shm.mappedBytesRead());
      m.put("shm_attached_bytes", shm.attachedBytesRead());
    }
    return m;
  }

  /** The shm transport this receiver reads through, alone or routed; null when it has none. */
  private static ShmTransport shmOf(Transport t) {
    if (t instanceof ShmTransport s) {
      return s;
    }
    if (t instanceof RoutingTransport r) {
      for (Transport inner : r.transports()) {
        if (inner instanceof ShmTransport s) {
          return s;
        }
      }
    }
    return null;
  }

  /**
   * The receiver's installer: keeps a verified step's receive buffers until the orchestrator
   * commits them into the live weights, once every rank verified its step. They stay valid until
   * then: a plain receiver double buffers; a follower runs its next refit only after the commit and
   * keeps one receiver per trainer buffer set.
   */
  private static final class StagedInstall implements Installer {
    private long step = -1;
    private Map<String, java.lang.foreign.MemorySegment> buffers;

    @Override
    public synchronized void install(
        long s, Map<String, java.lang.foreign.MemorySegment> receiveBuffers) {
      step = s;
      buffers = receiveBuffers;
    }

    synchronized void commitInto(Installer live, long s) {
      if (buffers == null || step != s) {
        throw new IllegalStateException(
            "no verified weights of step " + s + " are staged (last staged: " + step + ")");
      }
      live.install(s, buffers);
      buffers = null;
    }
  }

  @Override
  public Map<String, Object> commit(long step) {
    long t0 = System.nanoTime();
    if (inPlace) {
      // Already live and verified: every rank has it, so the version before it may be let go.
      if (live.lastStep() != step) {
        throw new IllegalStateException(
            "no verified weights of step " + step + " are live (last: " + live.lastStep() + ")");
      }
      follower.commit();
    } else {
      staged.commitInto(engine.installer(), step);
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("step", step);
    m.put("install_s", (System.nanoTime() - t0) / 1e9);
    m.putAll(engine.quantizationMetrics());
    return m;
  }

  /**
   * After a failed step: a rank that installed it in place puts back step {@code to}, read again
   * from the trainers' other buffer set and verified; torn live weights say which step tore them.
   */
  @Override
  public Map<String, Object> rollback(long to) {
    if (live.isTorn()) {
      return Map.of("step", live.lastStep(), "torn", live.tornStep());
    }
    if (!inPlace || spec.trainerSets() == 1 || live.lastStep() == to) {
      // Nothing to put back, or (one trainer set) nothing held to put back from.
      return Map.of("step", live.lastStep());
    }
    long t0 = System.nanoTime();
    long step = follower.rollback();
    return Map.of("step", step, "rollback_s", (System.nanoTime() - t0) / 1e9);
  }

  /** Writes the live (installed) weights: exactly what the engine would serve now. */
  @Override
  public Map<String, Object> dump(Path dir) throws Exception {
    if (live.isTorn()) {
      throw new IllegalStateException(
          "receiver "
              + spec.rank()
              + ": not dumping torn live weights: step "
              + live.tornStep()
              + " failed part-way through an in-place install over step "
              + live.lastStep());
    }
    Files.createDirectories(dir);
    // Device weights are copied to the host to be written.
    java.lang.foreign.Arena dumpArena = java.lang.foreign.Arena.ofConfined();
    try {
      return dumpFrom(dir, dumpArena);
    } finally {
      dumpArena.close();
    }
  }

  private Map<String, Object> dumpFrom(Path dir, java.lang.foreign.Arena dumpArena)
      throws Exception {
    List<SafetensorsTensor> tensors = new ArrayList<>();
    for (Map.Entry<String, ParamSpec> e : live.layout().entrySet()) {
      MemorySegment bytes = live.parameter(e.getKey());
      if (live.memory().isDevice()) {
        MemorySegment host =
            dumpArena.allocate(Math.max(1, bytes.byteSize()), 64).asSlice(0, bytes.byteSize());
        live.readInto(e.getKey(), host);
        bytes = host;
      }
      tensors.add(
          new SafetensorsTensor(e.getKey(), e.getValue().dtype(), e.getValue().shape(), bytes));
    }
    Path file = dir.resolve("receiver-" + spec.rank() + ".safetensors");
    SafetensorsWriter.write(
        file,
        tensors,
        Map.of("step", Long.toString(live.lastStep()), "rank", Integer.toString(spec.rank())));
    return Map.of("file", file.toString(), "step", live.lastStep());
  }

  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>();
    // The follower closes the receivers it made; either way receivers go before the memory and
    // transport.
    order.add(follower);
    order.add(receiver);
    order.add(live);
    order.add(transport);
    order.add(store);
    Closeables.closeAll(order);
  }
}
