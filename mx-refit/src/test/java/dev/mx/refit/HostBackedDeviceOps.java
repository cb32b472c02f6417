package dev.mx.refit;

import dev.mx.api.DType;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.refit.memory.HostMemoryOps;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Test double: memory operations that claim a device kind ({@code cuda:N}) while their memory is
 * host memory underneath, counting every call, so that tests without a GPU can prove which
 * implementation the receiver and publisher route each stage to. Allocations are remembered so a
 * test can tell its memory apart.
 */
final class HostBackedDeviceOps implements MemoryOps {
  private final MemoryKind kind;
  private final HostMemoryOps host = new HostMemoryOps(CpuDigestProvider::new);
  final Map<String, LongAdder> calls = new ConcurrentHashMap<>();

  /** Allocations made, as [address, end) pairs. */
  final java.util.List<long[]> allocations = new java.util.concurrent.CopyOnWriteArrayList<>();

  HostBackedDeviceOps(MemoryKind kind) {
    this.kind = kind;
  }

  long count(String op) {
    LongAdder a = calls.get(op);
    return a == null ? 0 : a.sum();
  }

  /** Whether {@code s} lies inside memory this double allocated (its "device" memory). */
  boolean owns(MemorySegment s) {
    for (long[] a : allocations) {
      if (s.address() >= a[0] && s.address() + s.byteSize() <= a[1]) {
        return true;
      }
    }
    return false;
  }

  private void record(String op, MemorySegment... onDevice) {
    calls.computeIfAbsent(op, k -> new LongAdder()).increment();
    for (MemorySegment s : onDevice) {
      if (!owns(s)) {
        throw new AssertionError(
            op
                + " was given memory at 0x"
                + Long.toHexString(s.address())
                + " that is not this double's "
                + kind
                + " memory");
      }
    }
  }

  @Override
  public MemoryKind kind() {
    return kind;
  }

  @Override
  public MemoryRegistration allocate(long bytes) {
    MemoryRegistration r = host.allocate(bytes);
    allocations.add(new long[] {r.segment().address(), r.segment().address() + bytes});
    record("allocate");
    return MemoryRegistration.ofKind(r, kind);
  }

  @Override
  public void copy(
      MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
    record("copy", src, dst);
    host.copy(src, srcOffset, dst, dstOffset, bytes);
  }

  @Override
  public void copyAll(
      MemorySegment src,
      long[] srcOffsets,
      MemorySegment[] dsts,
      long[] dstOffsets,
      long[] lengths) {
    record("copyAll", src);
    for (int i = 0; i < lengths.length; i++) {
      copy(src, srcOffsets[i], dsts[i], dstOffsets[i], lengths[i]);
    }
  }

  @Override
  public void copyToHost(
      MemorySegment src, long srcOffset, MemorySegment h, long hostOffset, long bytes) {
    record("copyToHost", src);
    host.copyToHost(src, srcOffset, h, hostOffset, bytes);
  }

  @Override
  public void copyFromHost(
      MemorySegment h, long hostOffset, MemorySegment dst, long dstOffset, long bytes) {
    record("copyFromHost", dst);
    host.copyFromHost(h, hostOffset, dst, dstOffset, bytes);
  }

  @Override
  public boolean supportsCast(DType from, DType to) {
    return host.supportsCast(from, to);
  }

  @Override
  public void viewCopy(
      MemorySegment src,
      long srcOffset,
      DType from,
      long[] srcStrides,
      MemorySegment dst,
      long dstOffset,
      DType to,
      long[] dstStrides,
      long[] shape) {
    record(from == to ? "viewCopy" : "cast", src, dst);
    host.viewCopy(src, srcOffset, from, srcStrides, dst, dstOffset, to, dstStrides, shape);
  }

  @Override
  public String digest(MemorySegment bytes) {
    record("digest", bytes);
    return host.digest(bytes);
  }
}
