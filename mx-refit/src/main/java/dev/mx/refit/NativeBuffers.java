package dev.mx.refit;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The receiver's native memory: a few large slabs from one arena, each carved into named buffers
 * and registered with the transport once. Closing deregisters (reverse order), then frees the
 * arena. With device {@link MemoryOps} the slabs are that device's memory instead, registered with
 * their memory kind.
 */
final class NativeBuffers implements AutoCloseable {
  static final long ALIGN = Slabs.ALIGN;

  private final Arena arena = Arena.ofShared();
  private final List<MemorySegment> slabs = new ArrayList<>();
  private final List<MemoryRegistration> registrations = new ArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  /** Null for host memory. */
  private final MemoryOps device;

  private final List<MemoryRegistration> deviceSlabs = new ArrayList<>();

  /** Memory others own (an engine's live weights written in place): resolvable, never freed. */
  private final List<MemorySegment> external = new ArrayList<>();

  /** Host memory. */
  NativeBuffers() {
    this(null);
  }

  /** Memory of {@code device}'s kind, or host memory when it is null. */
  NativeBuffers(MemoryOps device) {
    this.device = device;
  }

  /**
   * Allocates one zeroed slab holding every named buffer of the given byte sizes, in order, each
   * aligned to {@link #ALIGN}; returns the buffers by name. An empty map allocates nothing.
   */
  <K> Map<K, MemorySegment> carve(Map<K, Long> sizes) {
    if (sizes.isEmpty()) {
      return Map.of();
    }
    return Slabs.carve(slab(Slabs.size(sizes.values())), sizes);
  }

  /** Allocates one zeroed slab of at least {@code bytes} (page-aligned), to carve or to reuse. */
  MemorySegment slab(long bytes) {
    MemorySegment slab;
    if (device == null) {
      slab = arena.allocate(Math.max(ALIGN, Slabs.align(bytes)), 4096);
    } else {
      MemoryRegistration m = device.allocate(Math.max(ALIGN, Slabs.align(bytes)));
      deviceSlabs.add(m);
      slab = m.segment();
    }
    slabs.add(slab);
    return slab;
  }

  /** Registers every slab allocated so far and not yet registered. */
  void registerAll(Transport transport) {
    for (int i = registrations.size(); i < slabs.size(); i++) {
      registrations.add(
          device == null
              ? transport.register(slabs.get(i))
              : transport.register(slabs.get(i), device.kind()));
    }
  }

  /**
   * Makes memory owned elsewhere resolvable by {@link #resolve}; it is neither freed nor
   * registered.
   */
  void external(java.util.Collection<MemorySegment> segments) {
    external.addAll(segments);
  }

  /** Total bytes allocated. */
  long bytes() {
    long n = 0;
    for (MemorySegment s : slabs) {
      n += s.byteSize();
    }
    return n;
  }

  /**
   * The memory at absolute address {@code addr} of {@code n} bytes, which must lie inside one slab.
   *
   * @throws IllegalArgumentException otherwise
   */
  MemorySegment resolve(long addr, long n) {
    for (List<MemorySegment> l : List.of(slabs, external)) {
      for (MemorySegment s : l) {
        long off = addr - s.address();
        if (off >= 0 && off + n <= s.byteSize()) {
          return s.asSlice(off, n);
        }
      }
    }
    throw new IllegalArgumentException(
        "address 0x" + Long.toHexString(addr) + "+" + n + " lies outside the receiver's buffers");
  }

  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    List<AutoCloseable> order = new ArrayList<>(registrations);
    Collections.reverse(order);
    order.addAll(deviceSlabs.reversed());
    order.add(arena);
    dev.mx.api.util.Closeables.closeAll(order);
  }
}
