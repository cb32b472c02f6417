package dev.mx.transport.nixl;

import dev.mx.api.annotation.Stable;
import dev.mx.api.util.Settings;
import dev.mx.transport.kit.NativeAvailability;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Whether NIXL can be used in this process, decided once: the kill switch {@code
 * -Dmx.transport.noNative=true}, then {@code libnixl_capi.so} from {@code -Dmx.nixl.library} or
 * {@code MX_NIXL_LIBRARY} (a path) or else the system loader path, checked for every function the
 * binding calls and rejected when it is NIXL's stub build, then one short-lived agent that lists
 * the backend plugins NIXL can load (none is a cause too: NIXL looks for them in {@code
 * NIXL_PLUGIN_DIR}). The real failure is kept for {@link #unavailabilityCause()}.
 */
@Stable
public final class Nixl {
  /** The system property naming the library's path. */
  public static final String LIBRARY_PROPERTY = "mx.nixl.library";

  /** The environment variable naming it when the property is unset. */
  public static final String LIBRARY_ENV = "MX_NIXL_LIBRARY";

  /** The system property that disables every native backend of mx. */
  public static final String NO_NATIVE_PROPERTY = NativeAvailability.NO_NATIVE_PROPERTY;

  /** The name looked up on the system loader path when no path is configured. */
  static final String DEFAULT_NAME = "libnixl_capi.so";

  private static final Probe PROBE = probe(Settings.system());

  private static final NativeAvailability AVAILABILITY =
      new NativeAvailability("NIXL", PROBE.cause());

  /** What a probe found: the library and its plugins, or why NIXL is unusable. */
  record Probe(NixlLibrary library, List<String> plugins, Throwable cause) {}

  private Nixl() {}

  /** Probes NIXL as configured by {@code settings}; never throws. */
  static Probe probe(Settings settings) {
    try {
      NativeAvailability.refuseWhenSwitchedOff(
          Boolean.parseBoolean(settings.property(NO_NATIVE_PROPERTY)));
      String configured = settings.string(LIBRARY_PROPERTY, LIBRARY_ENV, null);
      NixlLibrary lib;
      try {
        lib = NixlLibrary.load(configured != null ? configured : DEFAULT_NAME);
      } catch (UnsatisfiedLinkError e) {
        if (configured != null) {
          throw e;
        }
        UnsatisfiedLinkError err =
            new UnsatisfiedLinkError(
                "NIXL is not installed: "
                    + DEFAULT_NAME
                    + " is not on the system loader path and neither -D"
                    + LIBRARY_PROPERTY
                    + " nor "
                    + LIBRARY_ENV
                    + " names one ("
                    + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage())
                    + ")");
        err.initCause(e);
        throw err;
      }
      List<String> plugins = listPlugins(lib);
      if (plugins.isEmpty()) {
        throw new UnsatisfiedLinkError(
            "NIXL at "
                + lib.origin()
                + " finds no backend plugin (set NIXL_PLUGIN_DIR to"
                + " the folder holding libplugin_UCX.so, by default <folder of libnixl.so>/plugins)");
      }
      return new Probe(lib, plugins, null);
    } catch (Throwable t) {
      return new Probe(null, List.of(), t);
    }
  }

  private static List<String> listPlugins(NixlLibrary lib) {
    MemorySegment agent =
        lib.createConfiguredAgent(
            "mx-probe-" + ProcessHandle.current().pid(), false, NixlOptions.THREAD_SYNC_STRICT, 0);
    try {
      return List.copyOf(lib.availablePlugins(agent));
    } finally {
      lib.destroyAgent(agent);
    }
  }

  /** Whether NIXL works in this process. Never throws. */
  public static boolean isAvailable() {
    return AVAILABILITY.isAvailable();
  }

  /** Why NIXL is unavailable (the original failure), or null when it is available. */
  public static Throwable unavailabilityCause() {
    return AVAILABILITY.cause();
  }

  /** Throws an error carrying {@link #unavailabilityCause()} when NIXL is unavailable. */
  public static void ensureAvailability() {
    AVAILABILITY.ensure();
  }

  /** The backend plugins the loaded NIXL offers (e.g. {@code [UCX]}); empty when unavailable. */
  public static List<String> plugins() {
    return PROBE.plugins();
  }

  /** Where the library was loaded from, or null when unavailable. */
  public static String libraryOrigin() {
    return PROBE.library() == null ? null : PROBE.library().origin();
  }

  static NixlLibrary library() {
    ensureAvailability();
    return PROBE.library();
  }
}
