package dev.mx.layout.gen;

import dev.mx.api.util.Settings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses the generator kernel once per process: the Vector API kernel when {@code
 * jdk.incubator.vector} is resolved (run with {@code --add-modules jdk.incubator.vector}, as {@code
 * ./mx} does) and not switched off with {@code -Dmx.gen.vector=false} / {@code MX_GEN_VECTOR=0};
 * the scalar kernel otherwise. Why the vector kernel is not in use is kept as a {@link Throwable}.
 */
final class ChunkKernels {
  private static final Logger LOG = LoggerFactory.getLogger(ChunkKernels.class);

  static final String VECTOR_PROPERTY = "mx.gen.vector";
  static final String VECTOR_ENV = "MX_GEN_VECTOR";
  private static final String VECTOR_MODULE = "jdk.incubator.vector";

  private static final ChunkKernel VECTOR;
  private static final Throwable VECTOR_UNAVAILABLE;

  static {
    ChunkKernel kernel = null;
    Throwable cause = null;
    if (!Settings.system().bool(VECTOR_PROPERTY, VECTOR_ENV, true)) {
      cause =
          new UnsupportedOperationException(
              "switched off by -D" + VECTOR_PROPERTY + " or " + VECTOR_ENV);
    } else if (ModuleLayer.boot().findModule(VECTOR_MODULE).isEmpty()) {
      cause =
          new UnsupportedOperationException(
              "module "
                  + VECTOR_MODULE
                  + " is not resolved; run the JVM with --add-modules "
                  + VECTOR_MODULE);
    } else {
      try {
        if (VectorChunkKernel.supported()) {
          kernel = new VectorChunkKernel();
        } else {
          cause =
              new UnsupportedOperationException("the preferred long vector has fewer than 2 lanes");
        }
      } catch (LinkageError e) {
        cause = e;
      }
    }
    VECTOR = kernel;
    VECTOR_UNAVAILABLE = cause;
    if (cause != null) {
      LOG.debug("weight generator uses the scalar kernel: {}", cause.toString());
    }
  }

  private ChunkKernels() {}

  static ChunkKernel best() {
    return VECTOR != null ? VECTOR : ChunkKernel.SCALAR;
  }

  /** Why the vector kernel is not used, or null when it is. */
  static Throwable vectorUnavailabilityCause() {
    return VECTOR_UNAVAILABLE;
  }
}
