package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import java.util.HexFormat;
import jcuda.driver.CUevent;
import jcuda.driver.JCudaDriver;

/**
 * The driver operations the {@code cuda-ipc} transport needs: exporting and mapping allocations
 * across processes, and completion events on mx's stream.
 */
@Stable
public final class CudaIpc {
  /** Bytes of an IPC handle. */
  public static final int HANDLE_BYTES = CudaDriverLibrary.IPC_HANDLE_BYTES;

  private static final int CUDA_ERROR_NOT_READY = 600;
  private static final int CU_EVENT_DISABLE_TIMING = 2;

  private CudaIpc() {}

  /**
   * An exported allocation: its IPC handle, and where the exported region starts inside it.
   *
   * @param handle the 64-byte handle another process opens
   * @param allocationBase the allocation's base address in the exporting process
   * @param allocationSize the allocation's size
   */
  public record Export(byte[] handle, long allocationBase, long allocationSize) {
    public String handleHex() {
      return HexFormat.of().formatHex(handle);
    }
  }

  /**
   * Exports the device allocation holding {@code address} (which must be device memory of {@code
   * device}).
   */
  public static Export export(CudaDevice device, long address) {
    device.makeCurrent();
    CudaDriverLibrary driver = Cuda.driver();
    long[] range = driver.addressRange(address);
    return new Export(driver.ipcGetMemHandle(range[0]), range[0], range[1]);
  }

  /** Maps another process's exported allocation into this one; returns its base address here. */
  public static long open(CudaDevice device, byte[] handle) {
    device.makeCurrent();
    return Cuda.driver().ipcOpenMemHandle(handle);
  }

  /** Unmaps what {@link #open} mapped. */
  public static void close(CudaDevice device, long mappedBase) {
    device.makeCurrent();
    Cuda.driver().ipcCloseMemHandle(mappedBase);
  }

  /** A completion marker recorded on mx's stream of a device. */
  public static final class Event implements AutoCloseable {
    private final CudaDevice device;
    private final CUevent event = new CUevent();
    private boolean destroyed;

    /** Records an event after everything issued so far on {@code device}'s stream. */
    public Event(CudaDevice device) {
      this.device = device;
      device.makeCurrent();
      CudaDevice.check(JCudaDriver.cuEventCreate(event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      int rc = JCudaDriver.cuEventRecord(event, device.stream());
      if (rc != 0) {
        JCudaDriver.cuEventDestroy(event);
        throw new CudaException("cuEventRecord", rc);
      }
    }

    /** Whether the work before the event finished; throws when it failed. */
    public boolean isDone() {
      device.makeCurrent();
      int rc = JCudaDriver.cuEventQuery(event);
      if (rc == CUDA_ERROR_NOT_READY) {
        return false;
      }
      CudaDevice.check(rc, "cuEventQuery (a copy before it failed)");
      return true;
    }

    @Override
    public synchronized void close() {
      if (!destroyed) {
        destroyed = true;
        device.makeCurrent();
        CudaDevice.check(JCudaDriver.cuEventDestroy(event), "cuEventDestroy");
      }
    }
  }
}
