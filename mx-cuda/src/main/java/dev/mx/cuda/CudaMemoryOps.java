package dev.mx.cuda;

import dev.mx.api.DType;
import dev.mx.api.annotation.Stable;
import dev.mx.api.memory.MemoryOps;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.MemorySegment;

/**
 * mx's memory operations on the memory of one CUDA device: zeroed {@link DeviceAllocation}s, device
 * copies on mx's stream, the strided re-slice and casts of {@link CudaCasts}, and the device digest
 * of {@link CudaDigest} (bit-identical with the CPU's). What a receiver or publisher with {@code
 * cuda:N} buffers runs.
 */
@Stable
public final class CudaMemoryOps implements MemoryOps {
  private final CudaDevice device;

  /** The operations of device {@code ordinal}. */
  public CudaMemoryOps(int ordinal) {
    this.device = CudaDevice.get(ordinal);
  }

  @Override
  public MemoryKind kind() {
    return device.memoryKind();
  }

  @Override
  public MemoryRegistration allocate(long bytes) {
    DeviceAllocation a = DeviceAllocation.allocate(device.ordinal(), bytes);
    try {
      CudaMemory.fill(device, a.segment().address(), bytes, (byte) 0);
    } catch (RuntimeException e) {
      a.close();
      throw e;
    }
    return a;
  }

  @Override
  public void copy(
      MemorySegment src, long srcOffset, MemorySegment dst, long dstOffset, long bytes) {
    check(src, srcOffset, bytes, "source");
    check(dst, dstOffset, bytes, "destination");
    if (bytes == 0) {
      return;
    }
    CudaMemory.copyAsync(device, dst.address() + dstOffset, src.address() + srcOffset, bytes);
    device.synchronize();
  }

  /** Every run on mx's stream, one wait at the end (a staged shard has one run per row). */
  @Override
  public void copyAll(
      MemorySegment src,
      long[] srcOffsets,
      MemorySegment[] dsts,
      long[] dstOffsets,
      long[] lengths) {
    for (int i = 0; i < lengths.length; i++) {
      check(src, srcOffsets[i], lengths[i], "source");
      check(dsts[i], dstOffsets[i], lengths[i], "destination");
    }
    for (int i = 0; i < lengths.length; i++) {
      if (lengths[i] > 0) {
        CudaMemory.copyAsync(
            device, dsts[i].address() + dstOffsets[i], src.address() + srcOffsets[i], lengths[i]);
      }
    }
    device.synchronize();
  }

  @Override
  public void copyToHost(
      MemorySegment src, long srcOffset, MemorySegment host, long hostOffset, long bytes) {
    check(src, srcOffset, bytes, "device source");
    if (bytes > 0) {
      CudaMemory.copyDeviceToHost(
          device, src.address() + srcOffset, host.asSlice(hostOffset, bytes));
    }
  }

  @Override
  public void copyFromHost(
      MemorySegment host, long hostOffset, MemorySegment dst, long dstOffset, long bytes) {
    check(dst, dstOffset, bytes, "device destination");
    if (bytes > 0) {
      CudaMemory.copyHostToDevice(
          device, host.asSlice(hostOffset, bytes), dst.address() + dstOffset);
    }
  }

  @Override
  public boolean supportsCast(DType from, DType to) {
    return CudaCasts.supports(from, to);
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
    CudaCasts.viewCopy(
        device.ordinal(),
        src.address() + srcOffset * from.elementSize(),
        from,
        srcStrides,
        dst.address() + dstOffset * to.elementSize(),
        to,
        dstStrides,
        shape);
  }

  @Override
  public String digest(MemorySegment bytes) {
    return CudaDigest.digest(device.ordinal(), bytes.address(), bytes.byteSize());
  }

  /** Pieces digested where they landed on this device ({@link CudaDigestParts}). */
  @Override
  public java.util.Optional<dev.mx.api.digest.DigestParts> digestParts(long byteCount) {
    return java.util.Optional.of(new CudaDigestParts(device.ordinal(), byteCount));
  }

  private void check(MemorySegment s, long offset, long bytes, String what) {
    if (offset < 0 || bytes < 0 || offset + bytes > s.byteSize()) {
      throw new IndexOutOfBoundsException(
          "cuda:"
              + device.ordinal()
              + " copy: "
              + what
              + " bytes ["
              + offset
              + ", "
              + (offset + bytes)
              + ") outside a segment of "
              + s.byteSize()
              + " bytes");
    }
  }

  @Override
  public String toString() {
    return "CudaMemoryOps[cuda:" + device.ordinal() + "]";
  }
}
