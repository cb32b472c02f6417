package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.transport.MemoryKind;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

/**
 * One CUDA device as mx uses it: its primary context (retained once, made current on each calling
 * thread), one stream for mx's kernels and copies, and the kernels loaded from the PTX that ships
 * in the jar. Lives as long as the process, like the primary context itself.
 */
@Stable
public final class CudaDevice {
  private static final Map<Integer, CudaDevice> DEVICES = new ConcurrentHashMap<>();
  // A blocking stream: it orders with the legacy default stream the synchronous host copies use.
  private static final int CU_STREAM_DEFAULT = 0;

  private final int ordinal;
  private final CUcontext context = new CUcontext();
  private final CUstream stream = new CUstream();
  private final Map<String, CUfunction> functions = new HashMap<>();

  /**
   * Small device buffers for kernel results, reused: cuMemFree would synchronize the device on
   * every call.
   */
  private final Map<String, Integer> grids = new ConcurrentHashMap<>();

  private final ConcurrentLinkedQueue<Long> scratch = new ConcurrentLinkedQueue<>();

  private CudaDevice(int ordinal) {
    this.ordinal = ordinal;
    CUdevice device = new CUdevice();
    check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
    check(
        JCudaDriver.cuDevicePrimaryCtxRetain(context, device),
        "cuDevicePrimaryCtxRetain(cuda:" + ordinal + ")");
    makeCurrent();
    check(
        JCudaDriver.cuStreamCreate(stream, CU_STREAM_DEFAULT),
        "cuStreamCreate(cuda:" + ordinal + ")");
    Map<String, CUmodule> modules = new HashMap<>();
    for (CudaKernels.Kernel k : CudaKernels.ALL) {
      CUmodule m = modules.computeIfAbsent(k.module(), name -> loadModule(k));
      CUfunction f = new CUfunction();
      check(
          JCudaDriver.cuModuleGetFunction(f, m, k.name()), "cuModuleGetFunction(" + k.name() + ")");
      functions.put(k.name(), f);
    }
  }

  /** Device {@code ordinal}, initialised on first use. */
  public static CudaDevice get(int ordinal) {
    Cuda.ensureAvailability();
    Cuda.checkOrdinal(ordinal);
    return DEVICES.computeIfAbsent(ordinal, CudaDevice::new);
  }

  public int ordinal() {
    return ordinal;
  }

  public MemoryKind memoryKind() {
    return MemoryKind.device(ordinal);
  }

  /**
   * Makes this device's context current on the calling thread (every entry point calls it first).
   */
  public void makeCurrent() {
    check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent(cuda:" + ordinal + ")");
  }

  /** Bytes of each scratch buffer from {@link #borrowScratch()}. */
  static final int SCRATCH_BYTES = 256;

  /**
   * A {@value #SCRATCH_BYTES}-byte device buffer for one operation's results; give it back when
   * done.
   */
  long borrowScratch() {
    Long b = scratch.poll();
    if (b != null) {
      return b;
    }
    makeCurrent();
    return Cuda.driver().memAlloc(SCRATCH_BYTES);
  }

  void returnScratch(long address) {
    scratch.add(address);
  }

  CUstream stream() {
    return stream;
  }

  /** Waits for everything issued on mx's stream of this device. */
  public void synchronize() {
    makeCurrent();
    check(JCudaDriver.cuStreamSynchronize(stream), "cuStreamSynchronize(cuda:" + ordinal + ")");
  }

  private CUmodule loadModule(CudaKernels.Kernel k) {
    String ptx;
    try (InputStream in = CudaDevice.class.getResourceAsStream(k.resource())) {
      if (in == null) {
        throw new CudaException(
            "PTX resource "
                + k.resource()
                + " is missing from the class path (mx-cuda's build"
                + " compiles it with nvcc)");
      }
      ptx = new String(in.readAllBytes(), StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new CudaException("reading " + k.resource() + ": " + e);
    }
    CUmodule m = new CUmodule();
    // The driver JIT-compiles the PTX for this device here.
    check(
        JCudaDriver.cuModuleLoadData(m, ptx),
        "cuModuleLoadData(" + k.resource() + ") on cuda:" + ordinal);
    return m;
  }

  /**
   * The grid that fills the device exactly once with {@code kernel} at {@code threads} per block:
   * the blocks that can be resident per SM (from the driver's occupancy calculator) times the SMs.
   * Grid-stride kernels launched with more would run a second, partial wave and finish late.
   */
  int fullGrid(CudaKernels.Kernel kernel, int threads) {
    return grids.computeIfAbsent(
        kernel.name() + "/" + threads,
        key -> {
          makeCurrent();
          int[] perSm = new int[1];
          check(
              JCudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                  perSm, functions.get(kernel.name()), threads, 0),
              "cuOccupancyMaxActiveBlocksPerMultiprocessor(" + kernel.name() + ")");
          return Math.max(1, perSm[0]) * Cuda.multiprocessors(ordinal);
        });
  }

  /**
   * Launches {@code kernel} on mx's stream with a 1-D grid, after checking the arguments against
   * its declaration: a {@link Long} for {@link CudaKernels.Param#POINTER} and {@link
   * CudaKernels.Param#LONG}, an {@link Integer} for {@link CudaKernels.Param#INT}. Does not wait.
   */
  void launch(CudaKernels.Kernel kernel, int blocks, int threads, Object... args) {
    kernel.checkArguments(args);
    Pointer[] slots = new Pointer[args.length];
    for (int i = 0; i < args.length; i++) {
      slots[i] =
          args[i] instanceof Integer v
              ? Pointer.to(new int[] {v})
              : Pointer.to(new long[] {(Long) args[i]});
    }
    makeCurrent();
    check(
        JCudaDriver.cuLaunchKernel(
            functions.get(kernel.name()),
            blocks,
            1,
            1,
            threads,
            1,
            1,
            0,
            stream,
            Pointer.to(slots),
            null),
        "cuLaunchKernel(" + kernel.name() + ") on cuda:" + ordinal);
  }

  /** A JCuda device pointer for a raw device address. */
  static CUdeviceptr pointer(long address) {
    return new CUdeviceptr().withByteOffset(address);
  }

  static void check(int rc, String what) {
    if (rc != 0) {
      throw new CudaException(what, rc);
    }
  }
}
