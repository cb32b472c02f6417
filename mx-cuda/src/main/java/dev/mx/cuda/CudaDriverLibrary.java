package dev.mx.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The few driver entry points mx calls through the foreign-function API rather than JCuda: the
 * probe (so a missing {@code libcuda.so.1} is a cause, not a dead JCuda class) and the IPC handles,
 * whose 64 bytes JCuda keeps private. Both share the process's one libcuda instance with JCuda.
 */
@SuppressWarnings("restricted") // calling the CUDA driver is what this class is for
final class CudaDriverLibrary {
  /** The driver's soname (the unversioned {@code libcuda.so} is only in development packages). */
  static final String SONAME = "libcuda.so.1";

  static final int IPC_HANDLE_BYTES = 64;
  static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
  static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
  static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
  static final int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1;

  private static final MemoryLayout IPC_HANDLE =
      MemoryLayout.sequenceLayout(IPC_HANDLE_BYTES, ValueLayout.JAVA_BYTE);

  private final MethodHandle cuInit;
  private final MethodHandle cuDriverGetVersion;
  private final MethodHandle cuDeviceGetCount;
  private final MethodHandle cuDeviceGet;
  private final MethodHandle cuDeviceGetAttribute;
  private final MethodHandle cuIpcGetMemHandle;
  private final MethodHandle cuIpcOpenMemHandle;
  private final MethodHandle cuIpcCloseMemHandle;
  private final MethodHandle cuMemAlloc;
  private final MethodHandle cuMemFree;
  private final MethodHandle cuMemcpyHtoD;
  private final MethodHandle cuMemcpyDtoH;
  private final MethodHandle cuMemGetAddressRange;

  private CudaDriverLibrary(SymbolLookup lib) {
    Linker l = Linker.nativeLinker();
    ValueLayout i32 = ValueLayout.JAVA_INT;
    ValueLayout ptr = ValueLayout.ADDRESS;
    cuInit = l.downcallHandle(find(lib, "cuInit"), FunctionDescriptor.of(i32, i32));
    cuDriverGetVersion =
        l.downcallHandle(find(lib, "cuDriverGetVersion"), FunctionDescriptor.of(i32, ptr));
    cuDeviceGetCount =
        l.downcallHandle(find(lib, "cuDeviceGetCount"), FunctionDescriptor.of(i32, ptr));
    cuDeviceGet = l.downcallHandle(find(lib, "cuDeviceGet"), FunctionDescriptor.of(i32, ptr, i32));
    cuDeviceGetAttribute =
        l.downcallHandle(
            find(lib, "cuDeviceGetAttribute"), FunctionDescriptor.of(i32, ptr, i32, i32));
    cuIpcGetMemHandle =
        l.downcallHandle(
            find(lib, "cuIpcGetMemHandle"), FunctionDescriptor.of(i32, ptr, ValueLayout.JAVA_LONG));
    // cuda.h maps cuIpcOpenMemHandle to the _v2 symbol; the handle is a 64-byte struct passed by
    // value.
    cuIpcOpenMemHandle =
        l.downcallHandle(
            find(lib, "cuIpcOpenMemHandle_v2"),
            FunctionDescriptor.of(i32, ptr, MemoryLayout.structLayout(IPC_HANDLE), i32));
    cuIpcCloseMemHandle =
        l.downcallHandle(
            find(lib, "cuIpcCloseMemHandle"), FunctionDescriptor.of(i32, ValueLayout.JAVA_LONG));
    // Raw addresses in and out (JCuda keeps a device pointer's address private).
    ValueLayout u64 = ValueLayout.JAVA_LONG;
    cuMemAlloc = l.downcallHandle(find(lib, "cuMemAlloc_v2"), FunctionDescriptor.of(i32, ptr, u64));
    cuMemFree = l.downcallHandle(find(lib, "cuMemFree_v2"), FunctionDescriptor.of(i32, u64));
    cuMemcpyHtoD =
        l.downcallHandle(find(lib, "cuMemcpyHtoD_v2"), FunctionDescriptor.of(i32, u64, u64, u64));
    cuMemcpyDtoH =
        l.downcallHandle(find(lib, "cuMemcpyDtoH_v2"), FunctionDescriptor.of(i32, u64, u64, u64));
    cuMemGetAddressRange =
        l.downcallHandle(
            find(lib, "cuMemGetAddressRange_v2"), FunctionDescriptor.of(i32, ptr, ptr, u64));
  }

  /** The base address and size of the device allocation holding {@code address}. */
  long[] addressRange(long address) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment base = a.allocate(ValueLayout.JAVA_LONG);
      MemorySegment size = a.allocate(ValueLayout.JAVA_LONG);
      check(
          call(() -> (int) cuMemGetAddressRange.invokeExact(base, size, address)),
          "cuMemGetAddressRange(0x" + Long.toHexString(address) + ")");
      return new long[] {base.get(ValueLayout.JAVA_LONG, 0), size.get(ValueLayout.JAVA_LONG, 0)};
    }
  }

  /** {@code cuMemAlloc} in the current context: the new allocation's device address. */
  long memAlloc(long bytes) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
      check(
          call(() -> (int) cuMemAlloc.invokeExact(out, bytes)), "cuMemAlloc(" + bytes + " bytes)");
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  void memFree(long address) {
    check(
        call(() -> (int) cuMemFree.invokeExact(address)),
        "cuMemFree(0x" + Long.toHexString(address) + ")");
  }

  /** Synchronous copy from host address {@code src} to device address {@code dst}. */
  void memcpyHtoD(long dst, long src, long bytes) {
    check(
        call(() -> (int) cuMemcpyHtoD.invokeExact(dst, src, bytes)),
        "cuMemcpyHtoD(" + bytes + " bytes to 0x" + Long.toHexString(dst) + ")");
  }

  /** Synchronous copy from device address {@code src} to host address {@code dst}. */
  void memcpyDtoH(long dst, long src, long bytes) {
    check(
        call(() -> (int) cuMemcpyDtoH.invokeExact(dst, src, bytes)),
        "cuMemcpyDtoH(" + bytes + " bytes from 0x" + Long.toHexString(src) + ")");
  }

  private static MemorySegment find(SymbolLookup lib, String name) {
    return lib.find(name)
        .orElseThrow(
            () ->
                new UnsatisfiedLinkError(
                    SONAME + " lacks " + name + "; the NVIDIA driver is too old for mx-cuda"));
  }

  /**
   * Loads the driver library.
   *
   * @throws UnsatisfiedLinkError naming {@value #SONAME} when no NVIDIA driver is installed
   */
  static CudaDriverLibrary load() {
    SymbolLookup lib;
    try {
      lib = SymbolLookup.libraryLookup(SONAME, Arena.global());
    } catch (IllegalArgumentException notFound) {
      UnsatisfiedLinkError e =
          new UnsatisfiedLinkError(
              "the CUDA driver library "
                  + SONAME
                  + " is not installed: this machine has no NVIDIA driver, so no GPU can be used ("
                  + notFound.getMessage()
                  + ")");
      e.initCause(notFound);
      throw e;
    }
    return new CudaDriverLibrary(lib);
  }

  void init() {
    check(call(() -> (int) cuInit.invokeExact(0)), "cuInit");
  }

  int driverVersion() {
    return intOut(cuDriverGetVersion, "cuDriverGetVersion");
  }

  int deviceCount() {
    return intOut(cuDeviceGetCount, "cuDeviceGetCount");
  }

  int attribute(int ordinal, int attribute) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment dev = a.allocate(ValueLayout.JAVA_INT);
      check(
          call(() -> (int) cuDeviceGet.invokeExact(dev, ordinal)), "cuDeviceGet(" + ordinal + ")");
      MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
      int device = dev.get(ValueLayout.JAVA_INT, 0);
      check(
          call(() -> (int) cuDeviceGetAttribute.invokeExact(out, attribute, device)),
          "cuDeviceGetAttribute(" + attribute + ", device " + ordinal + ")");
      return out.get(ValueLayout.JAVA_INT, 0);
    }
  }

  /**
   * The IPC handle of the allocation holding {@code deviceAddress} (the current context's device).
   */
  byte[] ipcGetMemHandle(long deviceAddress) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment handle = a.allocate(IPC_HANDLE_BYTES, 8);
      check(
          call(() -> (int) cuIpcGetMemHandle.invokeExact(handle, deviceAddress)),
          "cuIpcGetMemHandle(0x" + Long.toHexString(deviceAddress) + ")");
      return handle.toArray(ValueLayout.JAVA_BYTE);
    }
  }

  /**
   * Maps another process's allocation into this one (current context); returns its base address
   * here.
   */
  long ipcOpenMemHandle(byte[] handleBytes) {
    if (handleBytes.length != IPC_HANDLE_BYTES) {
      throw new IllegalArgumentException(
          "a CUDA IPC handle has " + IPC_HANDLE_BYTES + " bytes, got " + handleBytes.length);
    }
    try (Arena a = Arena.ofConfined()) {
      MemorySegment handle = a.allocate(IPC_HANDLE_BYTES, 8);
      MemorySegment.copy(handleBytes, 0, handle, ValueLayout.JAVA_BYTE, 0, IPC_HANDLE_BYTES);
      MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
      check(
          call(
              () ->
                  (int)
                      cuIpcOpenMemHandle.invokeExact(
                          out, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)),
          "cuIpcOpenMemHandle");
      return out.get(ValueLayout.JAVA_LONG, 0);
    }
  }

  void ipcCloseMemHandle(long base) {
    check(
        call(() -> (int) cuIpcCloseMemHandle.invokeExact(base)),
        "cuIpcCloseMemHandle(0x" + Long.toHexString(base) + ")");
  }

  private int intOut(MethodHandle h, String what) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(ValueLayout.JAVA_INT);
      check(call(() -> (int) h.invokeExact(out)), what);
      return out.get(ValueLayout.JAVA_INT, 0);
    }
  }

  @FunctionalInterface
  private interface Call {
    int run() throws Throwable;
  }

  private static int call(Call c) {
    try {
      return c.run();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private static void check(int rc, String what) {
    if (rc != 0) {
      throw new CudaException(what, rc);
    }
  }
}
