package dev.mx.digest;

import dev.mx.api.util.Settings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses the row kernel once per process: the Vector API kernel when {@code jdk.incubator.vector} is
 * resolved (run with {@code --add-modules jdk.incubator.vector}) and not switched off with
 * {@code -Dmx.digest.vector=false} / {@code MX_DIGEST_VECTOR=0}; the scalar kernel otherwise. Why the
 * vector kernel is not in use is kept as a {@link Throwable}, never swallowed.
 */
final class RowKernels {
  private static final Logger LOG = LoggerFactory.getLogger(RowKernels.class);

  static final String VECTOR_PROPERTY = "mx.digest.vector";
  static final String VECTOR_ENV = "MX_DIGEST_VECTOR";
  private static final String VECTOR_MODULE = "jdk.incubator.vector";

  private static final RowKernel VECTOR;
  private static final Throwable VECTOR_UNAVAILABLE;

  static {
    RowKernel kernel = null;
    Throwable cause = null;
    if (!Settings.system().bool(VECTOR_PROPERTY, VECTOR_ENV, true)) {
      cause = new UnsupportedOperationException(
          "switched off by -D" + VECTOR_PROPERTY + " or " + VECTOR_ENV);
    } else if (ModuleLayer.boot().findModule(VECTOR_MODULE).isEmpty()) {
      cause = new UnsupportedOperationException(
          "module " + VECTOR_MODULE + " is not resolved; run the JVM with --add-modules " + VECTOR_MODULE);
    } else {
      try {
        if (VectorRowKernel.supported()) {
          kernel = new VectorRowKernel();
        } else {
          cause = new UnsupportedOperationException("the preferred int vector shape does not tile a row");
        }
      } catch (LinkageError e) {
        cause = e;
      }
    }
    VECTOR = kernel;
    VECTOR_UNAVAILABLE = cause;
    if (cause != null) {
      LOG.debug("shard digest uses the scalar row kernel: {}", cause.toString());
    }
  }

  private RowKernels() {}

  /** The fastest kernel available (vector loads accept native and every kind of heap segment). */
  static RowKernel best() {
    return VECTOR != null ? VECTOR : ScalarRowKernel.INSTANCE;
  }

  /** Why the vector kernel is not used, or null when it is. */
  static Throwable vectorUnavailabilityCause() {
    return VECTOR_UNAVAILABLE;
  }
}
