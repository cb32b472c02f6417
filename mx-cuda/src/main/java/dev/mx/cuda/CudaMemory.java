package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.MemoryKind;
import java.lang.foreign.MemorySegment;
import jcuda.Pointer;
import jcuda.driver.JCudaDriver;

/**
 * Copies between host and device memory, and the question "is this address device memory?" that
 * lets a provider take a plain {@link MemorySegment} and pick the device path (unified virtual
 * addressing gives every device allocation an address no host allocation has).
 */
@Stable
public final class CudaMemory {
  private static final int CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2;
  private static final int CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9;
  private static final int CU_MEMORYTYPE_DEVICE = 2;

  private CudaMemory() {}

  /**
   * Where {@code address} lives: {@code cuda:N} for device memory of any context in this process
   * (our own allocations and mapped IPC allocations), host otherwise, and host whenever CUDA is
   * unavailable.
   */
  public static MemoryKind kindOf(long address) {
    if (!Cuda.isAvailable() || address == 0) {
      return MemoryKind.HOST;
    }
    CudaDevice.get(0).makeCurrent(); // the driver answers pointer queries in a context
    int[] type = new int[1];
    int rc =
        JCudaDriver.cuPointerGetAttribute(
            Pointer.to(type), CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CudaDevice.pointer(address));
    if (rc != 0 || type[0] != CU_MEMORYTYPE_DEVICE) {
      return MemoryKind
          .HOST; // pageable host memory is unknown to the driver: CUDA_ERROR_INVALID_VALUE
    }
    int[] ordinal = new int[1];
    CudaDevice.check(
        JCudaDriver.cuPointerGetAttribute(
            Pointer.to(ordinal), CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CudaDevice.pointer(address)),
        "cuPointerGetAttribute(DEVICE_ORDINAL, 0x" + Long.toHexString(address) + ")");
    return MemoryKind.device(ordinal[0]);
  }

  /** The device ordinal of {@code segment} when it is device memory, else -1. */
  public static int deviceOf(MemorySegment segment) {
    MemoryKind k = kindOf(segment.address());
    return k.isDevice() ? k.ordinal() : -1;
  }

  /** Copies host memory to a device address and waits. */
  public static void copyHostToDevice(CudaDevice device, MemorySegment host, long dstAddress) {
    requireNative(host);
    device.makeCurrent();
    Cuda.driver().memcpyHtoD(dstAddress, host.address(), host.byteSize());
  }

  /** Copies {@code host.byteSize()} bytes from a device address into host memory and waits. */
  public static void copyDeviceToHost(CudaDevice device, long srcAddress, MemorySegment host) {
    requireNative(host);
    device.makeCurrent();
    Cuda.driver().memcpyDtoH(host.address(), srcAddress, host.byteSize());
  }

  /**
   * Copies {@code bytes} between any two addresses the driver knows (device, or registered host
   * memory) on mx's stream of {@code device} without waiting; the driver picks the direction from
   * the addresses.
   */
  public static void copyAsync(CudaDevice device, long dstAddress, long srcAddress, long bytes) {
    device.makeCurrent();
    CudaDevice.check(
        JCudaDriver.cuMemcpyAsync(
            CudaDevice.pointer(dstAddress), CudaDevice.pointer(srcAddress), bytes, device.stream()),
        "cuMemcpyAsync("
            + bytes
            + " bytes 0x"
            + Long.toHexString(srcAddress)
            + " -> 0x"
            + Long.toHexString(dstAddress)
            + ")");
  }

  /** Sets {@code bytes} bytes at a device address to {@code value} and waits. */
  public static void fill(CudaDevice device, long address, long bytes, byte value) {
    device.makeCurrent();
    CudaDevice.check(
        JCudaDriver.cuMemsetD8Async(CudaDevice.pointer(address), value, bytes, device.stream()),
        "cuMemsetD8(" + bytes + " bytes at 0x" + Long.toHexString(address) + ")");
    device.synchronize();
  }

  private static void requireNative(MemorySegment host) {
    if (!host.isNative()) {
      throw new IllegalArgumentException(
          "host side of a device copy must be native memory, got a heap segment");
    }
  }
}
