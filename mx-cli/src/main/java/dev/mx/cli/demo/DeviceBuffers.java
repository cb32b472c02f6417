package dev.mx.cli.demo;

import dev.mx.api.memory.MemoryOps;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.api.transport.Transport;
import dev.mx.api.util.Closeables;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A trainer rank's buffers in device memory: one device allocation per host buffer of the same
 * name, registered with the transport under its memory kind. The weight generator writes host
 * memory, so each step is uploaded once after it is written (as a trainer's optimizer step would
 * leave its weights on the GPU); the publisher then serves, and digests, only the device copies.
 */
final class DeviceBuffers implements AutoCloseable {
  private final MemoryOps ops;
  private final Map<String, MemorySegment> host;
  private final Map<String, MemorySegment> device = new LinkedHashMap<>();
  private final Map<String, MemoryRegistration> registrations = new LinkedHashMap<>();
  private final List<AutoCloseable> owned = new ArrayList<>();

  DeviceBuffers(MemoryOps ops, Map<String, MemorySegment> host, Transport transport) {
    this.ops = ops;
    this.host = host;
    MemoryKind kind = ops.kind();
    try {
      for (Map.Entry<String, MemorySegment> e : host.entrySet()) {
        MemoryRegistration memory = ops.allocate(Math.max(1, e.getValue().byteSize()));
        owned.add(memory);
        MemorySegment seg = memory.segment().asSlice(0, e.getValue().byteSize());
        MemoryRegistration reg = transport.register(memory.segment(), kind);
        owned.add(reg);
        device.put(e.getKey(), seg);
        registrations.put(e.getKey(), MemoryRegistration.ofKind(reg, kind));
      }
    } catch (RuntimeException | Error e) {
      close();
      throw e;
    }
  }

  /** Copies every host buffer to its device buffer. */
  void upload() {
    host.forEach((name, h) -> ops.copyFromHost(h, 0, device.get(name), 0, h.byteSize()));
  }

  MemorySegment segment(String name) {
    return device.get(name);
  }

  /** The transport registrations, reporting the device kind (what the publisher digests by). */
  Map<String, MemoryRegistration> registrations() {
    return Collections.unmodifiableMap(registrations);
  }

  /** Flips byte {@code at} of {@code slice} (device memory) through the host. */
  void flip(MemorySegment slice, long at) {
    MemorySegment one = java.lang.foreign.Arena.ofAuto().allocate(1);
    ops.copyToHost(slice, at, one, 0, 1);
    one.set(
        java.lang.foreign.ValueLayout.JAVA_BYTE,
        0,
        (byte) (one.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0) ^ 0x5A));
    ops.copyFromHost(one, 0, slice, at, 1);
  }

  /** Deregisters, then frees, last first. */
  @Override
  public void close() {
    List<AutoCloseable> order = new ArrayList<>(owned);
    owned.clear();
    Closeables.closeAll(order.reversed());
  }
}
