package dev.mx.cli.demo;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.api.util.Settings;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.LiveWeights;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.refit.embed.InferenceRank;
import dev.mx.refit.embed.WeightsDump;
import dev.mx.refit.version.VersionFollower;
import dev.mx.refit.wire.WirePolicies;
import dev.mx.transport.kit.RoutingTransport;
import dev.mx.transport.shm.ShmTransport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One vLLM inference rank: its parameters in vLLM's layout as live weights, refit by the library's
 * {@link InferenceRank}, which pulls each step from the trainers, verifies it and stages it until
 * the orchestrator commits it.
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
  private MidReadKill midReadKill;
  private MetadataStore store;
  private LiveWeights live;
  private EngineWeights engine;
  private InferenceRank rank;

  /** With {@code --source checkpoint:DIR}: the mapped checkpoint, closed once it is installed. */
  private dev.mx.refit.checkpoint.CheckpointSource checkpoint;

  /**
   * Whether {@link #start} warms up in the background: the kernels and a rehearsed refit ({@link
   * RefitRehearsal}).
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
    transport = Workers.transport(spec, Workers.receiverSession(spec));
    store = MetadataStores.open(spec.metadata());
    MemoryKind memory = spec.memoryKind();
    // Weights this rank serves to the next group live in memory its transport allocated: a
    // same-host reader maps them (memory speed) instead of reading another process's pages.
    engine =
        EngineWeights.create(
            spec,
            memory.isDevice() ? DeviceCheck.ops(memory) : null,
            spec.inferenceGroup().serves() ? transport : null);
    VllmLayout geometry = engine.geometry();
    live = engine.live();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("rank", spec.rank());
    out.put("params", geometry.params().size());
    // In place (host memory) with versions; quantizing installs write other bytes than the
    // receivers pull: never in place.
    boolean inPlace = versions && spec.inPlace() && !memory.isDevice() && engine.fp8() == null;
    // In place, the orchestrator may arm a kill of a trainer part-way through the reads.
    midReadKill = inPlace ? new MidReadKill(WirePolicies.create(spec.wire())) : null;
    WorkerSpec.InferenceGroup group = spec.inferenceGroup();
    // A group after the first reads the installed weights of its source group, served as a
    // one-set trainer job would be; the first reads the trainers.
    boolean fromGroup = group.readsInstalled();
    InferenceRank.Builder builder =
        InferenceRank.builder(transport, store, Workers.sourceIdentity(spec))
            .rank(spec.rank())
            .holder(Workers.receiverSession(spec))
            .live(live)
            .geometry(engine.source())
            .commitInstaller(engine.installer())
            .config(
                ReceiverConfig.defaults()
                    .withWire(spec.wire())
                    .withVerify(VerifyMode.parse(spec.verify()))
                    .withTimeout(Workers.readTimeout(spec))
                    // shard bounding unless -Dmx.receiver.bounding / MX_RESHARD_BOUNDING says
                    // modelexpress
                    .withBounding(BoundingMode.fromSettings(Settings.system(), BoundingMode.SHARD)))
            .memory(memory)
            .stagingBytes(spec.stagingBytes())
            .delta(!spec.noDelta())
            // The publishers must be the job this rank expects: ranks 0..N-1 declaring its
            // topology.
            .expect(Workers.sourceExpectation(spec))
            .freshness(Workers.seconds(spec.heartbeatSeconds() * 3))
            .stallLimit(Workers.stallLimit(spec))
            .followVersions(versions)
            .inPlace(inPlace)
            // Installed weights are served from one buffer set: the engine's own.
            .trainerBufferSets(fromGroup ? 1 : spec.trainerSets())
            .warmUp(rehearse && !memory.isDevice())
            .rehearsal(versions ? () -> RefitRehearsal.runUnchecked(spec) : null)
            .wirePolicy(midReadKill);
    if (group.serves()) {
      builder.serveInstalled(
          Workers.installedIdentity(spec, group.index()),
          Workers.inferenceTopology(spec).worldSize(),
          Workers.installedTopology(spec));
    }
    if (spec.checkpointDir() != null && !fromGroup) {
      checkpoint = SourceOption.open(spec, dev.mx.layout.model.ModelConfigs.load(spec.model()));
      builder.checkpoint(checkpoint, SourceOption.stepOf(checkpoint));
    }
    rank = builder.build();
    try {
      out.putAll(rank.start());
    } finally {
      // Installed (or failed): the engine holds its own copy; the mapping is no longer needed.
      Closeables.closeAll(checkpoint);
      checkpoint = null;
    }
    return out;
  }

  /**
   * {@code kill-publisher-mid-read:SESSION=PID,...}: kills a trainer part-way through this rank's
   * next reads ({@link MidReadKill}); in-place receivers only.
   */
  @Override
  public Map<String, Object> fault(String kind) {
    String prefix = MidReadKill.KIND + ":";
    if (!kind.startsWith(prefix) || midReadKill == null) {
      throw new IllegalArgumentException(
          "receiver " + spec.rank() + " does not inject fault '" + kind + "' (in place only)");
    }
    midReadKill.arm(kind.substring(prefix.length()));
    return Map.of("armed", kind.substring(prefix.length()));
  }

  /**
   * Refits {@code step} ({@link InferenceRank#step}), with the shm transport's cumulative counters.
   */
  @Override
  public Map<String, Object> step(long step) {
    Map<String, Object> m = rank.step(step, Workers.cap(spec));
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

  @Override
  public Map<String, Object> commit(long step) {
    Map<String, Object> m = rank.commit(step);
    m.putAll(engine.quantizationMetrics());
    return m;
  }

  @Override
  public Map<String, Object> rollback(long to) {
    return rank.rollback(to);
  }

  /** Writes the live (installed) weights: exactly what the engine would serve now. */
  @Override
  public Map<String, Object> dump(Path dir) throws Exception {
    Path file = dir.resolve(Workers.receiverSession(spec) + ".safetensors");
    WeightsDump.write(live, file, spec.rank());
    return Map.of("file", file.toString(), "step", live.lastStep());
  }

  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>();
    // The rank closes its follower and receivers before the memory and transport.
    order.add(rank);
    order.add(checkpoint);
    order.add(live);
    order.add(transport);
    order.add(store);
    Closeables.closeAll(order);
  }
}
