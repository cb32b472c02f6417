package dev.mx.api.util;

/**
 * The one check every optional Vector API kernel makes before loading: the incubating module {@code
 * jdk.incubator.vector} must be resolved (run the JVM with {@code --add-modules
 * jdk.incubator.vector}) and the kernel not switched off by its system property or environment
 * variable. Pure JDK; the kernels themselves live in the modules that use them.
 */
public final class VectorModule {
  /** The module's name, as given to {@code --add-modules}. */
  public static final String NAME = "jdk.incubator.vector";

  private VectorModule() {}

  /**
   * Why a kernel switched by {@code -Dproperty=false} / {@code envVar=0} must not use the Vector
   * API, or null when it may (the kernel still checks its own shapes).
   */
  public static Throwable unavailabilityCause(String property, String envVar) {
    if (!Settings.system().bool(property, envVar, true)) {
      return new UnsupportedOperationException("switched off by -D" + property + " or " + envVar);
    }
    if (ModuleLayer.boot().findModule(NAME).isEmpty()) {
      return new UnsupportedOperationException(
          "module " + NAME + " is not resolved; run the JVM with --add-modules " + NAME);
    }
    return null;
  }
}
