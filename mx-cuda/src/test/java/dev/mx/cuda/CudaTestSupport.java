package dev.mx.cuda;

import org.junit.jupiter.api.Assumptions;

/**
 * Skips a test, printing why, when CUDA is unavailable; with {@code -Dmx.test.requireNative=true}
 * (GPU machines) fails it instead, so a broken driver or install cannot pass as a skip.
 */
public final class CudaTestSupport {
  private CudaTestSupport() {}

  public static void assumeCuda() {
    if (Cuda.isAvailable()) {
      return;
    }
    Throwable cause = Cuda.unavailabilityCause();
    if (Boolean.getBoolean("mx.test.requireNative")) {
      throw new AssertionError(
          "CUDA is required (-Dmx.test.requireNative=true) but unavailable: " + cause, cause);
    }
    System.out.println("SKIPPED (CUDA unavailable): " + cause);
    Assumptions.abort("CUDA unavailable: " + cause);
  }
}
