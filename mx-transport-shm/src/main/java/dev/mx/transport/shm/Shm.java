package dev.mx.transport.shm;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.Settings;
import dev.mx.transport.kit.NativeAvailability;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether the shm transport can work in this process, decided once: Linux with a writable
 * shared-memory directory ({@code /dev/shm}, or {@code -Dmx.shm.dir} / {@code MX_SHM_DIR}) and
 * libc's calls linked. A second, separate probe says whether cross-memory attach ({@code
 * process_vm_readv}, needed only to serve memory a caller registered rather than {@link
 * dev.mx.api.transport.Transport#allocate allocated}) works; the transport is available without it.
 * {@code -Dmx.transport.noNative=true} switches the transport off.
 */
@Stable
public final class Shm {
  /** The shared-memory directory's property and environment variable. */
  public static final String DIR_PROPERTY = "mx.shm.dir";

  public static final String DIR_ENV = "MX_SHM_DIR";

  private static final NativeAvailability AVAILABILITY;
  private static final Throwable CMA_CAUSE;
  private static final Path DIR;
  private static final ShmHost SELF;

  static {
    Throwable cause = null;
    Throwable cmaCause = null;
    Path dir = Path.of(Settings.system().string(DIR_PROPERTY, DIR_ENV, "/dev/shm"));
    ShmHost self = null;
    try {
      NativeAvailability.refuseWhenSwitchedOff(
          Settings.system().bool(NativeAvailability.NO_NATIVE_PROPERTY, null, false));
      String os = System.getProperty("os.name", "");
      if (!os.toLowerCase(java.util.Locale.ROOT).contains("linux")) {
        throw new UnsupportedOperationException("the shm transport needs Linux; this is " + os);
      }
      if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
        throw new IllegalStateException(
            "shared-memory directory "
                + dir
                + " is missing or not writable (set "
                + DIR_PROPERTY
                + " or "
                + DIR_ENV
                + ")");
      }
      self = ShmHost.current();
      ShmNative.describe(0); // links libc now, so a missing symbol shows here
      cmaCause = probeCrossMemoryAttach(self);
    } catch (Throwable t) {
      cause = t;
    }
    AVAILABILITY = new NativeAvailability("shm", cause);
    CMA_CAUSE = cause != null ? cause : cmaCause;
    DIR = dir;
    SELF = self;
  }

  private Shm() {}

  /**
   * Reads 8 bytes of this process's own memory through process_vm_readv; returns why that failed,
   * or null.
   */
  private static Throwable probeCrossMemoryAttach(ShmHost self) {
    try (Arena a = Arena.ofConfined()) {
      MemorySegment src = a.allocate(8);
      MemorySegment dst = a.allocate(8);
      src.set(ValueLayout.JAVA_LONG, 0, 0x6d78_7368_6d21L);
      MemorySegment local = a.allocate(16);
      MemorySegment remote = a.allocate(16);
      local.set(ValueLayout.JAVA_LONG, 0, dst.address());
      local.set(ValueLayout.JAVA_LONG, 8, 8);
      remote.set(ValueLayout.JAVA_LONG, 0, src.address());
      remote.set(ValueLayout.JAVA_LONG, 8, 8);
      long n = ShmNative.processVmReadv((int) self.pid(), local, remote, 1, ShmNative.callState(a));
      if (n != 8 || dst.get(ValueLayout.JAVA_LONG, 0) != src.get(ValueLayout.JAVA_LONG, 0)) {
        return new IllegalStateException(
            "process_vm_readv read " + n + " bytes of 8, or wrong bytes");
      }
      return null;
    } catch (Throwable t) {
      return t;
    }
  }

  public static boolean isAvailable() {
    return AVAILABILITY.isAvailable();
  }

  /** Why the transport is unavailable, or null. */
  public static Throwable unavailabilityCause() {
    return AVAILABILITY.cause();
  }

  /**
   * Throws an error carrying {@link #unavailabilityCause()} when shm is unavailable (the contract
   * of every native backend, {@link NativeAvailability}).
   */
  public static void ensureAvailability() {
    AVAILABILITY.ensure();
  }

  /** Whether peers can read memory a caller registered (cross-memory attach works here). */
  public static boolean crossMemoryAttach() {
    return CMA_CAUSE == null;
  }

  /** Why cross-memory attach does not work, or null. */
  public static Throwable crossMemoryAttachCause() {
    return CMA_CAUSE;
  }

  /** The directory the transport's files live in. */
  public static Path directory() {
    return DIR;
  }

  static ShmHost self() {
    return SELF;
  }
}
