package dev.mx.transport.ucx;

import dev.mx.api.annotation.Stable;
import dev.mx.transport.kit.NativeAvailability;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether UCX can be used in this process, decided once: the kill switch {@code
 * -Dmx.transport.noNative=true}, then {@code libucp} through the foreign-function API (before any
 * jucx class is touched, so a missing library is an explained cause, not a JVM failure), then the
 * symbols jucx calls for what this transport uses, then jucx's own native library. The real failure
 * is kept for {@link #unavailabilityCause()}.
 *
 * <p>Before libucp is first loaded, {@code UCX_ERROR_SIGNALS} is set empty in the C environment
 * (unless the user set it): libucs installs its own SIGSEGV handler when it loads, and the JVM
 * takes SIGSEGV for ordinary null checks in compiled code, so until jucx removes that handler any
 * such check would end the process. With the variable empty, the handler is never installed.
 */
@SuppressWarnings("restricted") // calling native code is what this class is for
@Stable
public final class Ucx {
  /** The system property that disables every native backend of mx. */
  public static final String NO_NATIVE_PROPERTY = NativeAvailability.NO_NATIVE_PROPERTY;

  /**
   * The libucp functions jucx calls on this transport's paths. jucx binds lazily, so a missing one
   * would kill the JVM at its first call (as {@code ucp_memh_pack} does with UCX 1.13): check them
   * up front.
   */
  private static final List<String> REQUIRED_SYMBOLS =
      List.of(
          "ucp_init_version",
          "ucp_cleanup",
          "ucp_config_read",
          "ucp_config_modify",
          "ucp_config_release",
          "ucp_worker_create",
          "ucp_worker_destroy",
          "ucp_worker_get_address",
          "ucp_worker_release_address",
          "ucp_worker_progress",
          "ucp_worker_arm",
          "ucp_worker_get_efd",
          "ucp_worker_signal",
          "ucp_ep_create",
          "ucp_ep_close_nbx",
          "ucp_ep_flush_nbx",
          "ucp_ep_rkey_unpack",
          "ucp_rkey_destroy",
          "ucp_mem_map",
          "ucp_mem_unmap",
          "ucp_rkey_pack",
          "ucp_rkey_buffer_release",
          "ucp_get_nbi",
          "ucp_request_free",
          "ucp_request_cancel");

  private static final NativeAvailability AVAILABILITY;
  private static final String VERSION;

  static {
    Throwable cause = null;
    String version = null;
    try {
      NativeAvailability.refuseWhenSwitchedOff(Boolean.getBoolean(NO_NATIVE_PROPERTY));
      version = probeLibucp();
      // Only now touch jucx: its static initializer loads libjucx, which links against libucp.
      Class<?> nativeLibs =
          Class.forName("org.openucx.jucx.NativeLibs", true, Ucx.class.getClassLoader());
      nativeLibs.getMethod("load").invoke(null);
    } catch (java.lang.reflect.InvocationTargetException e) {
      cause =
          new UnsatisfiedLinkError(
              "jucx could not load its native library: " + e.getCause().getMessage());
      cause.initCause(e.getCause());
    } catch (Throwable t) {
      cause = t;
    }
    AVAILABILITY = new NativeAvailability("UCX", cause);
    VERSION = cause == null ? version : null;
  }

  private Ucx() {}

  /**
   * Keeps libucs from installing signal handlers that would take the JVM's SIGSEGVs (see the class
   * doc).
   */
  private static void keepJvmSignalHandlers() throws Throwable {
    Linker linker = Linker.nativeLinker();
    SymbolLookup libc = linker.defaultLookup();
    MethodHandle getenv =
        linker.downcallHandle(
            libc.find("getenv").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS));
    MethodHandle setenv =
        linker.downcallHandle(
            libc.find("setenv").orElseThrow(),
            FunctionDescriptor.of(
                ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_INT));
    try (Arena a = Arena.ofConfined()) {
      MemorySegment name = a.allocateFrom("UCX_ERROR_SIGNALS");
      if (((MemorySegment) getenv.invokeExact(name)).equals(MemorySegment.NULL)) {
        int rc = (int) setenv.invokeExact(name, a.allocateFrom(""), 0);
        if (rc != 0) {
          throw new IllegalStateException("setenv(UCX_ERROR_SIGNALS) failed");
        }
      }
    }
  }

  /** Looks libucp up, checks the symbols jucx needs, and returns its version string. */
  private static String probeLibucp() throws Throwable {
    keepJvmSignalHandlers();
    SymbolLookup ucp = null;
    List<String> tried = new ArrayList<>();
    for (String name : List.of("libucp.so.0", "libucp.so")) {
      try {
        ucp = SymbolLookup.libraryLookup(name, Arena.global());
        break;
      } catch (IllegalArgumentException notFound) {
        tried.add(name);
      }
    }
    if (ucp == null) {
      throw new UnsatisfiedLinkError(
          "UCX is not installed: none of "
              + tried
              + " could be loaded (install libucx0, e.g. apt-get install libucx0 ucx-utils)");
    }
    List<String> missing = new ArrayList<>();
    for (String s : REQUIRED_SYMBOLS) {
      if (ucp.find(s).isEmpty()) {
        missing.add(s);
      }
    }
    if (!missing.isEmpty()) {
      throw new UnsatisfiedLinkError(
          "libucp lacks " + missing + " which jucx needs; install a newer UCX");
    }
    MethodHandle versionString =
        Linker.nativeLinker()
            .downcallHandle(
                ucp.find("ucp_get_version_string")
                    .orElseThrow(
                        () -> new UnsatisfiedLinkError("libucp lacks ucp_get_version_string")),
                FunctionDescriptor.of(ValueLayout.ADDRESS));
    MemorySegment s = (MemorySegment) versionString.invokeExact();
    return s.reinterpret(256).getString(0);
  }

  /** Whether UCX (libucp and jucx) works in this process. Never throws. */
  public static boolean isAvailable() {
    return AVAILABILITY.isAvailable();
  }

  /** Why UCX is unavailable (the original failure), or null when it is available. */
  public static Throwable unavailabilityCause() {
    return AVAILABILITY.cause();
  }

  /** Throws an error carrying {@link #unavailabilityCause()} when UCX is unavailable. */
  public static void ensureAvailability() {
    AVAILABILITY.ensure();
  }

  /** The version of the loaded libucp (e.g. {@code 1.13.1}), or null when unavailable. */
  public static String version() {
    return VERSION;
  }
}
