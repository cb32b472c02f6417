package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.MxException;

/**
 * A CUDA driver call failed: names the call and the driver's result code (and its name when known).
 */
@Stable
public class CudaException extends MxException {
  private static final long serialVersionUID = 1L;
  private final int result;

  public CudaException(String call, int result) {
    super(call + " failed: CUDA error " + result + " (" + name(result) + ")");
    this.result = result;
  }

  public CudaException(String message) {
    super(message);
    this.result = -1;
  }

  /** The driver's {@code CUresult}, or -1 when the failure is not a driver result. */
  public int result() {
    return result;
  }

  private static String name(int result) {
    try {
      return jcuda.driver.CUresult.stringFor(result);
    } catch (LinkageError e) {
      return "unknown";
    }
  }
}
