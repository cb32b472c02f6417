package dev.mx.cuda;

import dev.mx.api.annotation.Stable;
import dev.mx.transport.kit.NativeAvailability;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether CUDA can be used in this process, decided once: the kill switch {@code
 * -Dmx.transport.noNative=true}, then the driver library {@code libcuda.so.1} through the
 * foreign-function API (before any JCuda class is touched: JCuda's driver class dies on first use
 * without a driver), {@code cuInit}, at least one device, and finally JCuda's own native library.
 * The real failure is kept for {@link #unavailabilityCause()}.
 */
@Stable
public final class Cuda {
  /** The system property that disables every native backend of mx. */
  public static final String NO_NATIVE_PROPERTY = NativeAvailability.NO_NATIVE_PROPERTY;

  /** A device's compute capability, e.g. 9.0 for an H100/H200. */
  public record ComputeCapability(int major, int minor) {
    @Override
    public String toString() {
      return major + "." + minor;
    }
  }

  private static final NativeAvailability AVAILABILITY;
  private static final CudaDriverLibrary DRIVER;
  private static final int DRIVER_VERSION;
  private static final List<ComputeCapability> DEVICES;
  private static final List<Integer> MULTIPROCESSORS;

  static {
    Throwable cause = null;
    CudaDriverLibrary driver = null;
    int version = 0;
    List<ComputeCapability> devices = new ArrayList<>();
    List<Integer> sms = new ArrayList<>();
    try {
      NativeAvailability.refuseWhenSwitchedOff(Boolean.getBoolean(NO_NATIVE_PROPERTY));
      driver = CudaDriverLibrary.load();
      driver.init();
      version = driver.driverVersion();
      int count = driver.deviceCount();
      if (count == 0) {
        throw new CudaException(
            "the CUDA driver (version " + versionString(version) + ") sees no device");
      }
      for (int d = 0; d < count; d++) {
        devices.add(
            new ComputeCapability(
                driver.attribute(d, CudaDriverLibrary.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                driver.attribute(
                    d, CudaDriverLibrary.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)));
        sms.add(driver.attribute(d, CudaDriverLibrary.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
      }
      // Only now touch JCuda: its driver class loads a JNI library that links against libcuda.
      int rc = jcuda.driver.JCudaDriver.cuInit(0);
      if (rc != 0) {
        throw new CudaException("cuInit through JCuda", rc);
      }
    } catch (Throwable t) {
      cause = t;
    }
    AVAILABILITY = new NativeAvailability("CUDA", cause);
    DRIVER = cause == null ? driver : null;
    DRIVER_VERSION = cause == null ? version : 0;
    DEVICES = cause == null ? List.copyOf(devices) : List.of();
    MULTIPROCESSORS = cause == null ? List.copyOf(sms) : List.of();
  }

  private Cuda() {}

  /** Whether CUDA (driver, a device, JCuda) works in this process. Never throws. */
  public static boolean isAvailable() {
    return AVAILABILITY.isAvailable();
  }

  /** Why CUDA is unavailable (the original failure), or null when it is available. */
  public static Throwable unavailabilityCause() {
    return AVAILABILITY.cause();
  }

  /** Throws an error carrying {@link #unavailabilityCause()} when CUDA is unavailable. */
  public static void ensureAvailability() {
    AVAILABILITY.ensure();
  }

  /** Number of CUDA devices (0 when unavailable). */
  public static int deviceCount() {
    return DEVICES.size();
  }

  /** The compute capability of device {@code ordinal}. */
  public static ComputeCapability computeCapability(int ordinal) {
    ensureAvailability();
    checkOrdinal(ordinal);
    return DEVICES.get(ordinal);
  }

  /** Streaming multiprocessors of device {@code ordinal} (sizes kernel grids). */
  public static int multiprocessors(int ordinal) {
    ensureAvailability();
    checkOrdinal(ordinal);
    return MULTIPROCESSORS.get(ordinal);
  }

  /** The driver's CUDA version, e.g. {@code 13.0}, or null when unavailable. */
  public static String driverVersion() {
    return AVAILABILITY.isAvailable() ? versionString(DRIVER_VERSION) : null;
  }

  /** One line for reports: the driver and each device, or why CUDA is unavailable. */
  public static String describe() {
    if (!AVAILABILITY.isAvailable()) {
      return "CUDA unavailable: " + AVAILABILITY.cause();
    }
    StringBuilder sb =
        new StringBuilder("CUDA driver " + driverVersion() + ", " + DEVICES.size() + " device(s):");
    for (int d = 0; d < DEVICES.size(); d++) {
      sb.append(" cuda:")
          .append(d)
          .append(" (sm ")
          .append(DEVICES.get(d))
          .append(", ")
          .append(MULTIPROCESSORS.get(d))
          .append(" SMs)");
    }
    return sb.toString();
  }

  static CudaDriverLibrary driver() {
    ensureAvailability();
    return DRIVER;
  }

  static void checkOrdinal(int ordinal) {
    if (ordinal < 0 || ordinal >= DEVICES.size()) {
      throw new IllegalArgumentException(
          "no CUDA device cuda:" + ordinal + " (this process sees " + DEVICES.size() + ")");
    }
  }

  private static String versionString(int v) {
    return (v / 1000) + "." + (v % 1000) / 10;
  }
}
