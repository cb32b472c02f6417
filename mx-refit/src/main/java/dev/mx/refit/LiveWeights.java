package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.refit.InPlaceTarget;
import dev.mx.api.refit.Installer;
import dev.mx.api.refit.ParamSpec;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An engine's live weights in native memory: one slab carved into the parameters of a layout.
 *
 * <p>Two ways to fill them. As an {@link Installer}, {@link #install} copies every receive buffer
 * into the live parameter of the same name; because the receiver calls it only after a refit fully
 * succeeded, a failed refit never touches these bytes. As an {@link InPlaceTarget}, a receiver
 * writes the parameters themselves (register them first with {@link #registerWith}); {@link
 * #isTorn()} then says whether the last in-place step failed part-way. With device {@link
 * MemoryOps} the parameters are device memory and installs copy device to device.
 */
@Stable
public final class LiveWeights implements Installer, InPlaceTarget, AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final Map<String, ParamSpec> layout;
  private final Map<String, MemorySegment> live;
  private final MemorySegment slab;

  /** Set aside for the receivers writing in place ({@link #staging()}), or NULL. */
  private final MemorySegment staging;

  /** The key of the staging buffer among the carved ones: no parameter is named so. */
  private static final String STAGING = "\0staging";

  private final AtomicBoolean closed = new AtomicBoolean();
  private final List<MemoryRegistration> registrations = new ArrayList<>();
  private volatile long installs;
  private volatile long lastStep = -1;
  private volatile long tornStep = -1;

  /** Null for host memory. */
  private final MemoryOps device;

  private MemoryRegistration deviceSlab;

  /** The transport that allocated the host slab ({@link #allocatedBy}), or null. */
  private final Transport allocator;

  private MemoryRegistration allocation;

  /** Allocates zeroed live parameters for the given layout. */
  public LiveWeights(Map<String, ParamSpec> layout) {
    this(layout, null);
  }

  /**
   * As {@link #LiveWeights(Map)}, in the memory of {@code device} (host memory when null or of host
   * kind).
   */
  public LiveWeights(Map<String, ParamSpec> layout, MemoryOps device) {
    this(layout, device, 0);
  }

  /**
   * As {@link #LiveWeights(Map, MemoryOps)}, with {@code stagingBytes} more in the same slab for
   * the receivers that write these weights in place to stage through ({@link #staging()}):
   * allocated and zeroed now, so the first refit neither allocates nor faults it in.
   */
  public LiveWeights(Map<String, ParamSpec> layout, MemoryOps device, long stagingBytes) {
    this(layout, device, null, stagingBytes);
  }

  /**
   * As {@link #LiveWeights(Map, MemoryOps, long)} in host memory that {@code transport} allocates
   * ({@link Transport#allocate}): a same-host transport maps it into the processes that read it, so
   * an engine serving its installed weights serves them at memory speed. {@link #registerWith} that
   * transport returns this allocation. Zeroed (and so faulted in) now; close before the transport.
   */
  public static LiveWeights allocatedBy(
      Map<String, ParamSpec> layout, Transport transport, long stagingBytes) {
    return new LiveWeights(
        layout, null, java.util.Objects.requireNonNull(transport, "transport"), stagingBytes);
  }

  private LiveWeights(
      Map<String, ParamSpec> layout, MemoryOps device, Transport allocator, long stagingBytes) {
    this.allocator = allocator;
    if (stagingBytes < 0) {
      throw new IllegalArgumentException("staging bytes must not be negative: " + stagingBytes);
    }
    this.device = device != null && device.kind().isDevice() ? device : null;
    this.layout = Collections.unmodifiableMap(new LinkedHashMap<>(layout));
    Map<String, Long> sizes = new LinkedHashMap<>();
    layout.forEach((name, spec) -> sizes.put(name, spec.byteSize()));
    if (stagingBytes > 0) {
      sizes.put(STAGING, stagingBytes);
    }
    long total = Slabs.size(sizes.values());
    try {
      if (allocator != null) {
        allocation = allocator.allocate(Math.max(Slabs.ALIGN, total));
        slab = allocation.segment();
        slab.fill((byte) 0);
      } else if (this.device == null) {
        slab = arena.allocate(Math.max(Slabs.ALIGN, total), 4096);
      } else {
        deviceSlab = this.device.allocate(Math.max(Slabs.ALIGN, total));
        slab = deviceSlab.segment();
      }
    } catch (RuntimeException e) {
      close();
      throw e;
    }
    Map<String, MemorySegment> carved = new LinkedHashMap<>(Slabs.carve(slab, sizes));
    MemorySegment reserved = carved.remove(STAGING);
    this.staging = reserved == null ? MemorySegment.NULL : reserved;
    this.live = Collections.unmodifiableMap(carved);
  }

  /** The staging set aside at construction, or {@link MemorySegment#NULL}. */
  @Override
  public MemorySegment staging() {
    return staging;
  }

  /** Where the live parameters are: host memory, or the device of the operations given. */
  public MemoryKind memory() {
    return device == null ? MemoryKind.HOST : device.kind();
  }

  /**
   * Bytes of native memory the live parameters and the staging set aside take (one slab, cache-line
   * aligned buffers).
   */
  public long nativeBytes() {
    return slab.byteSize();
  }

  /**
   * Registers the live memory with {@code transport} so that a receiver reading through it can
   * write the parameters in place; the registration is released by {@link #close()}, before the
   * memory. Register once per transport.
   */
  public synchronized MemoryRegistration registerWith(Transport transport) {
    ensureOpen();
    if (transport == allocator) {
      return allocation; // its own memory: registered since it was allocated
    }
    MemoryRegistration r =
        device == null ? transport.register(slab) : transport.register(slab, device.kind());
    registrations.add(r);
    return r;
  }

  /**
   * Releases a registration {@link #registerWith} made, before {@link #close()} (a transport that
   * closes before the weights, e.g. a checkpoint's).
   */
  public synchronized void release(MemoryRegistration registration) {
    if (registrations.remove(registration)) {
      registration.close();
    }
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
   * Copies each buffer into its live parameter; a buffer that is the live parameter itself (an
   * in-place refit) is not copied.
   *
   * @throws IllegalArgumentException naming a parameter that is unknown or of another size (before
   *     any copy)
   */
  @Override
  public synchronized void install(long step, Map<String, MemorySegment> receiveBuffers) {
    check(receiveBuffers);
    for (Map.Entry<String, MemorySegment> e : receiveBuffers.entrySet()) {
      MemorySegment target = live.get(e.getKey());
      long n = e.getValue().byteSize();
      if (n == 0 || e.getValue().address() == target.address()) {
        continue;
      }
      if (device == null) {
        MemorySegment.copy(e.getValue(), 0, target, 0, n);
      } else {
        device.copy(e.getValue(), 0, target, 0, n);
      }
    }
    installed(step);
  }

  /**
   * Checks that every buffer has a live parameter of its name and size, before any is written.
   *
   * @throws IllegalArgumentException naming the first parameter that is unknown or of another size
   */
  synchronized void check(Map<String, MemorySegment> receiveBuffers) {
    ensureOpen();
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
  }

  @Override
  public synchronized void installed(long step) {
    if (step == lastStep && tornStep < 0 && installs > 0) {
      return; // already told (an in-place receiver calls both install and installed)
    }
    installs++;
    lastStep = step;
    tornStep = -1;
  }

  @Override
  public synchronized void torn(long step, RuntimeException cause) {
    tornStep = step;
  }

  /**
   * Whether the last in-place refit failed part-way and nothing was installed since: the parameters
   * may then hold a mix of {@link #lastStep()} and {@link #tornStep()}.
   */
  public boolean isTorn() {
    return tornStep >= 0;
  }

  /** The step whose in-place install failed part-way, or -1 when the weights are whole. */
  public long tornStep() {
    return tornStep;
  }

  /**
   * The live parameter (read it; it changes only inside {@link #install} or an in-place refit);
   * device memory when {@link #memory()} is a device: read it with {@link #readInto} then.
   */
  @Override
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

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("live weights are closed");
    }
  }

  /** Deregisters the live memory from every transport (reverse order), then frees it. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      List<AutoCloseable> order = new ArrayList<>();
      synchronized (this) {
        order.addAll(registrations.reversed());
      }
      if (deviceSlab != null) {
        order.add(deviceSlab);
      }
      if (allocation != null) {
        order.add(allocation);
      }
      order.add(arena);
      Closeables.closeAll(order);
    }
  }
}
