package dev.mx.refit.cast;

import dev.mx.api.util.VectorModule;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides once per process whether contiguous casts run on {@link VectorCasts}: when {@code
 * jdk.incubator.vector} is resolved (run with {@code --add-modules jdk.incubator.vector}, as {@code
 * ./mx} does), the machine has 256-bit int vectors, and it is not switched off with {@code
 * -Dmx.cast.vector=false} / {@code MX_CAST_VECTOR=0}. Why not is kept as a {@link Throwable}.
 */
final class CastKernels {
  private static final Logger LOG = LoggerFactory.getLogger(CastKernels.class);

  static final String VECTOR_PROPERTY = "mx.cast.vector";
  static final String VECTOR_ENV = "MX_CAST_VECTOR";

  /** Whether the vector kernel is in use; read on every run, so a static final the JIT folds. */
  static final boolean VECTOR;

  private static final Throwable VECTOR_UNAVAILABLE;

  static {
    Throwable cause = VectorModule.unavailabilityCause(VECTOR_PROPERTY, VECTOR_ENV);
    if (cause == null) {
      try {
        if (!VectorCasts.supported()) {
          cause =
              new UnsupportedOperationException(
                  "the preferred int vector is narrower than 256 bits");
        }
      } catch (LinkageError e) {
        cause = e;
      }
    }
    VECTOR = cause == null;
    VECTOR_UNAVAILABLE = cause;
    if (cause != null) {
      LOG.debug("casts use the scalar kernel: {}", cause.toString());
    }
  }

  private CastKernels() {}

  /** Why the vector kernel is not used, or null when it is. */
  static Throwable vectorUnavailabilityCause() {
    return VECTOR_UNAVAILABLE;
  }
}
