package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.WeightVersion;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.layout.gen.ChangeSchedule;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.embed.TrainerRank;
import dev.mx.refit.publish.Publisher;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * One trainer rank: its Megatron (or FSDP) buffers in native memory allocated by its transport
 * (shared memory over shm, so receivers copy from a mapping instead of reading this process),
 * filled by the weight generator with each step's values and published, with digests.
 *
 * <p>Publishing is the library's {@link TrainerRank}. With weight versions ({@code mx demo}) the
 * rank keeps two buffer sets behind a {@link dev.mx.refit.version.VersionedPublisher}: each step is
 * written into the set that does not hold the newest version (only once no receiver holds a lease
 * on what it held) and lands as this rank's slot of the step's version (docs/VERSIONS.md). Without
 * ({@code mx publish} of one step), one set is published through a plain {@link Publisher}.
 */
final class TrainerWorker implements Worker {
  private final WorkerSpec spec;
  private final boolean versions;
  private TrainerRankLayout layout;
  private final List<TrainerBuffers> sets = new ArrayList<>();

  /** With quantized sources ({@code --trainer-dtype fp8-block} ...) their codes and scales. */
  private QuantizedSets quantized;

  /** Which tensors each step changes ({@code --changed}); built on the first fill. */
  private ChangeSchedule schedule;

  /** The set holding the newest published step. */
  private int newest;

  private Transport transport;
  private MetadataStore store;
  private TrainerRank rank;

  /**
   * Per set, its device copy when the weights live on a device ({@code --device cuda}); empty on
   * the host.
   */
  private final List<DeviceBuffers> devices = new ArrayList<>();

  TrainerWorker(WorkerSpec spec, boolean versions) {
    this.spec = spec;
    this.versions = versions;
  }

  @Override
  public Map<String, Object> start() {
    ModelArchitecture model = ModelConfigs.load(spec.model());
    DType dtype = Fp8Format.trainerMaster(spec);
    layout = Workers.trainerTopology(spec).layout(model, dtype).ranks().get(spec.rank());
    quantized = QuantizedSets.of(spec, layout);
    transport = Workers.transport(spec, Workers.trainerSession(spec, spec.rank()));
    store = MetadataStores.open(spec.metadata());
    for (int i = 0; i < (versions ? spec.trainerSets() : 1); i++) {
      if (quantized != null) {
        // Served from the transport's memory like the plain buffers.
        quantized.allocate(transport::allocate);
      }
      if (spec.memoryKind().isDevice()) {
        // The generator writes host buffers; the device copies are what the transport serves.
        TrainerBuffers host = TrainerBuffers.allocate(layout);
        sets.add(host);
        devices.add(
            new DeviceBuffers(DeviceCheck.ops(spec.memoryKind()), host.segments(), transport));
      } else {
        sets.add(TrainerBuffers.allocate(layout, transport::allocate));
      }
    }
    TrainerRank.Builder b =
        TrainerRank.builder(transport, store, spec.identity())
            .job(spec.rank(), spec.trainerWorldSize(), Workers.trainerTopology(spec).toString())
            .workerId(Workers.trainerSession(spec, spec.rank()))
            .heartbeatInterval(Workers.seconds(spec.heartbeatSeconds()))
            .leaseWait(Workers.cap(spec))
            .stallLimit(Workers.stallLimit(spec))
            .versions(versions);
    for (int i = 0; i < sets.size(); i++) {
      b.bufferSet(tensors(i));
    }
    rank = b.start();
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("rank", spec.rank());
    out.put("label", layout.label());
    out.put("bytes", layout.byteSize());
    out.put(
        "published_shards",
        layout.aliases().size() + (quantized == null ? 0 : quantized.extraShards()));
    return out;
  }

  /** What buffer set {@code set} publishes: its host buffers, or their device copies. */
  private Consumer<Publisher.Builder> tensors(int set) {
    if (quantized != null) {
      return quantized.tensors(set, sets.get(set));
    }
    if (devices.isEmpty()) {
      return VersionedTrainer.tensors(layout, sets.get(set));
    }
    DeviceBuffers device = devices.get(set);
    return b -> {
      // Already registered with the transport under the device kind: the publisher serves them, we
      // free them.
      device.registrations().values().forEach(b::buffer);
      b.deviceId(spec.memoryKind().ordinal());
      VersionedTrainer.aliases(b, layout, device::segment);
    };
  }

  /** Writes {@code step} into set {@code set} and, on a device, uploads it. */
  private void fill(int set, long step, int threads) {
    if (schedule == null) {
      schedule = new ChangeSchedule(ModelConfigs.load(spec.model()), spec.changed());
    }
    // Every tensor is written with the values of the step that last changed it: a second buffer
    // set then also holds the unchanged tensors of the previous step.
    ChangeSchedule s = schedule;
    sets.get(set).fill(name -> s.stepOf(name, step), threads);
    if (quantized != null) {
      quantized.quantize(set, sets.get(set), threads);
    }
    if (!devices.isEmpty()) {
      devices.get(set).upload();
    }
  }

  @Override
  public Map<String, Object> step(long step) {
    long t0 = System.nanoTime();
    int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
    double[] fillS = new double[1];
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("step", step);
    WeightVersion v =
        rank.publish(
            step,
            set -> {
              long f0 = System.nanoTime();
              fill(set, step, threads);
              fillS[0] = (System.nanoTime() - f0) / 1e9;
              newest = set;
            });
    if (v != null) {
      out.put("version", v.id());
      out.put("state", v.state().name());
    }
    out.put("fill_s", fillS[0]);
    out.put("publish_s", (System.nanoTime() - t0) / 1e9 - fillS[0]);
    return out;
  }

  /**
   * Flips one byte of the first shard this rank publishes of the newest step (with quantized
   * sources, of its first scale shard) after its digest went out: receivers must refuse it.
   */
  @Override
  public Map<String, Object> fault(String kind) {
    if (!kind.equals("corrupt")) {
      throw new IllegalArgumentException("a trainer injects only 'corrupt', not '" + kind + "'");
    }
    if (quantized != null) {
      return quantized.corrupt(newest);
    }
    AliasShard victim = layout.aliases().get(0);
    if (!devices.isEmpty()) {
      long bytes = victim.shape().byteSize(layout.dtype().elementSize());
      MemorySegment slice =
          devices
              .get(newest)
              .segment(victim.bufferName())
              .asSlice(victim.elementOffset() * layout.dtype().elementSize(), bytes);
      devices.get(newest).flip(slice, bytes / 2);
      return Map.of("tensor", victim.hfName(), "byte", bytes / 2);
    }
    return flipMiddleByte(sets.get(newest).slice(victim), victim.hfName());
  }

  /** Flips the middle byte of host memory {@code slice} holding part of {@code tensor}. */
  static Map<String, Object> flipMiddleByte(MemorySegment slice, String tensor) {
    long at = slice.byteSize() / 2;
    slice.set(ValueLayout.JAVA_BYTE, at, (byte) (slice.get(ValueLayout.JAVA_BYTE, at) ^ 0x5A));
    return Map.of("tensor", tensor, "byte", at);
  }

  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>();
    // The publishers stop serving (a versioned one marks its slots STALE first), then the buffers
    // are deregistered and freed, then their transport goes.
    order.add(rank);
    order.addAll(devices.reversed());
    if (quantized != null) {
      order.add(quantized);
    }
    order.addAll(sets.reversed());
    order.add(transport);
    order.add(store);
    Closeables.closeAll(order);
  }
}
