package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.MemoryKind;
import dev.mx.api.transport.MemoryRegistration;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Device memory from {@code cuMemAlloc}, freed exactly once by {@link #close()}. Its {@link
 * #segment()} carries the device address and length, so it goes wherever mx takes a region
 * (publisher regions, receiver buffers, staging), and {@link #memoryKind()} says {@code cuda:N}:
 * the CPU must never dereference that segment.
 */
@Stable
public final class DeviceAllocation implements MemoryRegistration {
  private final CudaDevice device;
  private final MemorySegment segment;
  private final AtomicBoolean closed = new AtomicBoolean();

  private DeviceAllocation(CudaDevice device, long address, long bytes) {
    this.device = device;
    this.segment = MemorySegment.ofAddress(address).reinterpret(bytes);
  }

  /**
   * Allocates {@code bytes} on device {@code ordinal} (256-byte aligned, contents undefined).
   *
   * @throws CudaException naming the size and device when the driver refuses (e.g. out of memory)
   */
  public static DeviceAllocation allocate(int ordinal, long bytes) {
    if (bytes <= 0) {
      throw new IllegalArgumentException(
          "device allocation of " + bytes + " bytes on cuda:" + ordinal);
    }
    CudaDevice device = CudaDevice.get(ordinal);
    device.makeCurrent();
    return new DeviceAllocation(device, Cuda.driver().memAlloc(bytes), bytes);
  }

  @Override
  public MemorySegment segment() {
    if (closed.get()) {
      throw new IllegalStateException(
          "device allocation 0x"
              + Long.toHexString(segment.address())
              + " on cuda:"
              + device.ordinal()
              + " was freed");
    }
    return segment;
  }

  @Override
  public MemoryKind memoryKind() {
    return device.memoryKind();
  }

  public CudaDevice device() {
    return device;
  }

  /** Copies {@code host} (host memory) to byte {@code offset} of this allocation and waits. */
  public void copyFrom(MemorySegment host, long offset) {
    checkRange(offset, host.byteSize());
    CudaMemory.copyHostToDevice(device, host, segment.address() + offset);
  }

  /**
   * Copies {@code host.byteSize()} bytes from byte {@code offset} of this allocation into {@code
   * host} and waits.
   */
  public void copyTo(long offset, MemorySegment host) {
    checkRange(offset, host.byteSize());
    CudaMemory.copyDeviceToHost(device, segment.address() + offset, host);
  }

  private void checkRange(long offset, long n) {
    if (offset < 0 || n < 0 || offset + n > segment.byteSize()) {
      throw new IndexOutOfBoundsException(
          "bytes ["
              + offset
              + ", "
              + (offset + n)
              + ") are outside the device allocation of "
              + segment.byteSize()
              + " bytes on cuda:"
              + device.ordinal());
    }
  }

  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      device.makeCurrent();
      Cuda.driver().memFree(segment.address());
    }
  }

  @Override
  public String toString() {
    return "DeviceAllocation[cuda:"
        + device.ordinal()
        + ", 0x"
        + Long.toHexString(segment.address())
        + "+"
        + segment.byteSize()
        + "]";
  }
}
