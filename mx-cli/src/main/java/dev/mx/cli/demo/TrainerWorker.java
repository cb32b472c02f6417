package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.publish.Publisher;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One trainer rank: its Megatron (or FSDP) buffers in native memory allocated by its transport (shared memory
 * over shm, so receivers copy from a mapping instead of reading this process), filled by the weight generator
 * with each step's values and published, with digests, through a {@link Publisher}.
 */
final class TrainerWorker implements Worker {
  private final WorkerSpec spec;
  private TrainerRankLayout layout;
  private TrainerBuffers buffers;
  private Transport transport;
  private MetadataStore store;
  private Publisher publisher;
  /** Set when the weights live on a device ({@code --device cuda}). */
  private DeviceBuffers device;

  TrainerWorker(WorkerSpec spec) {
    this.spec = spec;
  }

  @Override
  public Map<String, Object> start() {
    ModelArchitecture model = ModelConfigs.load(spec.model());
    DType dtype = DType.parse(spec.trainerDtype());
    layout = Workers.trainerTopology(spec).layout(model, dtype).ranks().get(spec.rank());
    transport = Workers.transport(spec, Workers.trainerSession(spec, spec.rank()));
    if (spec.memoryKind().isDevice()) {
      // The generator writes host buffers; the device copies are what the transport serves.
      buffers = TrainerBuffers.allocate(layout);
      device = new DeviceBuffers(DeviceCheck.ops(spec.memoryKind()), buffers.segments(), transport);
    } else {
      buffers = TrainerBuffers.allocate(layout, transport::allocate);
    }
    store = MetadataStores.open(spec.metadata());
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("rank", spec.rank());
    out.put("label", layout.label());
    out.put("bytes", layout.byteSize());
    out.put("published_shards", layout.published().size());
    return out;
  }

  @Override
  public Map<String, Object> step(long step) {
    long t0 = System.nanoTime();
    buffers.fill(step, Math.max(1, Runtime.getRuntime().availableProcessors()));
    if (device != null) {
      device.upload();
    }
    double fillS = (System.nanoTime() - t0) / 1e9;
    if (publisher == null) {
      Publisher.Builder b = Publisher.builder(transport, store)
          .identity(spec.identity())
          .workerId(Workers.trainerSession(spec, spec.rank()))
          .rank(spec.rank())
          .topology(spec.trainerWorldSize(), Workers.trainerTopology(spec).toString())
          .heartbeatInterval(Workers.seconds(spec.heartbeatSeconds()))
          .step(step);
      // Already registered by the transport's allocate: the publisher serves them and leaves them to us.
      for (MemoryRegistration r : (device != null ? device.registrations() : buffers.registrations()).values()) {
        b.buffer(r);
      }
      if (device != null) {
        b.deviceId(spec.memoryKind().ordinal());
      }
      for (AliasShard a : layout.published()) {
        MemorySegment buffer = device != null ? device.segment(a.bufferName()) : buffers.segment(a.bufferName());
        b.alias(a.hfName(), layout.dtype(), a.globalShape(), a.shardOffset(), a.shape(), buffer,
            a.elementOffset() * layout.dtype().elementSize());
      }
      publisher = b.start();
    } else {
      publisher.republish(step);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("step", step);
    out.put("fill_s", fillS);
    out.put("publish_s", (System.nanoTime() - t0) / 1e9 - fillS);
    return out;
  }

  /** Flips one byte of the first published shard after its digest went out: receivers must refuse it. */
  @Override
  public Map<String, Object> fault(String kind) {
    if (!kind.equals("corrupt")) {
      throw new IllegalArgumentException("a trainer injects only 'corrupt', not '" + kind + "'");
    }
    AliasShard victim = layout.published().get(0);
    if (device != null) {
      long bytes = victim.shape().byteSize(layout.dtype().elementSize());
      MemorySegment slice = device.segment(victim.bufferName()).asSlice(victim.elementOffset()
          * layout.dtype().elementSize(), bytes);
      device.flip(slice, bytes / 2);
      return Map.of("tensor", victim.hfName(), "byte", bytes / 2);
    }
    MemorySegment slice = buffers.slice(victim);
    long at = slice.byteSize() / 2;
    slice.set(ValueLayout.JAVA_BYTE, at, (byte) (slice.get(ValueLayout.JAVA_BYTE, at) ^ 0x5A));
    return Map.of("tensor", victim.hfName(), "byte", at);
  }

  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>();
    // The publisher stops serving, then the buffers are deregistered and freed, then their transport goes.
    order.add(publisher);
    order.add(device);
    order.add(buffers);
    order.add(transport);
    order.add(store);
    Closeables.closeAll(order);
  }
}
