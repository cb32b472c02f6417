package dev.mx.refit;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An engine's live weights in native memory, installed by copying: {@link #install} copies every
 * receive buffer into the live parameter of the same name. Because the receiver calls it only after
 * a refit fully succeeded, a failed refit never touches these bytes. Useful as the installer of a
 * simple engine, of {@code mx demo}, and of tests. With device {@link MemoryOps} the live
 * parameters are device memory and installs copy device to device.
 */
public final class LiveWeights implements Installer, AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final Map<String, ParamSpec> layout;
  private final Map<String, MemorySegment> live = new LinkedHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private volatile long installs;
  private volatile long lastStep = -1;

  /** Null for host memory. */
  private final MemoryOps device;

  private final java.util.List<MemoryRegistration> deviceMemory = new java.util.ArrayList<>();

  /** Allocates zeroed live parameters for the given layout. */
  public LiveWeights(Map<String, ParamSpec> layout) {
    this(layout, null);
  }

  /**
   * As {@link #LiveWeights(Map)}, in the memory of {@code device} (host memory when null or of host
   * kind).
   */
  public LiveWeights(Map<String, ParamSpec> layout, MemoryOps device) {
    this.device = device != null && device.kind().isDevice() ? device : null;
    this.layout = Collections.unmodifiableMap(new LinkedHashMap<>(layout));
    try {
      layout.forEach((name, spec) -> live.put(name, allocate(spec.byteSize())));
    } catch (RuntimeException e) {
      close();
      throw e;
    }
  }

  private MemorySegment allocate(long bytes) {
    if (device == null) {
      return arena.allocate(Math.max(1, bytes), 64).asSlice(0, bytes);
    }
    MemoryRegistration m = device.allocate(Math.max(1, bytes));
    deviceMemory.add(m);
    return m.segment().asSlice(0, bytes);
  }

  /** Where the live parameters are: host memory, or the device of the operations given. */
  public dev.mx.api.transport.MemoryKind memory() {
    return device == null ? dev.mx.api.transport.MemoryKind.HOST : device.kind();
  }

  /**
   * Copies live parameter {@code name} into host memory {@code host} (its size), from wherever it
   * lives.
   */
  public void readInto(String name, MemorySegment host) {
    MemorySegment s = parameter(name);
    if (device == null) {
      MemorySegment.copy(s, 0, host, 0, s.byteSize());
    } else {
      device.copyToHost(s, 0, host, 0, s.byteSize());
    }
  }

  /**
   * Copies each buffer into its live parameter.
   *
   * @throws IllegalArgumentException naming a parameter that is unknown or of another size (before
   *     any copy)
   */
  @Override
  public synchronized void install(long step, Map<String, MemorySegment> receiveBuffers) {
    if (closed.get()) {
      throw new IllegalStateException("live weights are closed");
    }
    for (Map.Entry<String, MemorySegment> e : receiveBuffers.entrySet()) {
      MemorySegment target = live.get(e.getKey());
      if (target == null || target.byteSize() != e.getValue().byteSize()) {
        throw new IllegalArgumentException(
            "cannot install parameter '"
                + e.getKey()
                + "' of "
                + e.getValue().byteSize()
                + " bytes: live parameter "
                + (target == null ? "does not exist" : "has " + target.byteSize() + " bytes"));
      }
    }
    for (Map.Entry<String, MemorySegment> e : receiveBuffers.entrySet()) {
      if (device == null) {
        MemorySegment.copy(e.getValue(), 0, live.get(e.getKey()), 0, e.getValue().byteSize());
      } else if (e.getValue().byteSize() > 0) {
        device.copy(e.getValue(), 0, live.get(e.getKey()), 0, e.getValue().byteSize());
      }
    }
    installs++;
    lastStep = step;
  }

  /**
   * The live parameter (read it; it changes only inside {@link #install}); device memory when
   * {@link #memory()} is a device: read it with {@link #readInto} then.
   */
  public MemorySegment parameter(String name) {
    MemorySegment s = live.get(name);
    if (s == null) {
      throw new IllegalArgumentException(
          "no live parameter '" + name + "'; known: " + live.keySet());
    }
    return s;
  }

  public Map<String, ParamSpec> layout() {
    return layout;
  }

  /** Successful installs so far. */
  public long installs() {
    return installs;
  }

  /** Step of the last install, or -1. */
  public long lastStep() {
    return lastStep;
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      java.util.List<AutoCloseable> order = new java.util.ArrayList<>(deviceMemory.reversed());
      order.add(arena);
      dev.mx.api.util.Closeables.closeAll(order);
    }
  }
}
