package dev.mx.digest;

import dev.mx.api.util.Settings;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Chooses the row kernel. The Vector API kernel is available when {@code jdk.incubator.vector} is
 * resolved (run with {@code --add-modules jdk.incubator.vector}) and not switched off with {@code
 * -Dmx.digest.vector=false} / {@code MX_DIGEST_VECTOR=0}; why it is not is kept as a {@link
 * Throwable}, never swallowed.
 *
 * <p>Even when it is available it only takes inputs up to {@link #VECTOR_MAX_BYTES}. Measured on
 * the project's machine (docs/performance/mx-digest.md): on data in cache the vector kernel sums
 * 1.2&ndash;1.7 times faster than the scalar one, but on data streamed from memory the scalar loop,
 * which has the shape of the plain int32 sum, keeps up with that sum and the vector kernel falls
 * 10&ndash;20% behind it.
 */
final class RowKernels {
  private static final Logger LOG = LoggerFactory.getLogger(RowKernels.class);

  static final String VECTOR_PROPERTY = "mx.digest.vector";
  static final String VECTOR_ENV = "MX_DIGEST_VECTOR";
  private static final String VECTOR_MODULE = "jdk.incubator.vector";

  /** The largest input the vector kernel takes: beyond it the data no longer stays in cache. */
  static final long VECTOR_MAX_BYTES = 16L << 20;

  private static final RowKernel VECTOR;
  private static final Throwable VECTOR_UNAVAILABLE;

  static {
    RowKernel kernel = null;
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
        if (VectorRowKernel.supported()) {
          kernel = new VectorRowKernel();
        } else {
          cause =
              new UnsupportedOperationException(
                  "the preferred int vector shape does not tile a row");
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

  /**
   * The kernel for an input of {@code byteCount} bytes (vector loads accept native and heap
   * segments).
   */
  static RowKernel forBytes(long byteCount) {
    return VECTOR != null && byteCount <= VECTOR_MAX_BYTES ? VECTOR : ScalarRowKernel.INSTANCE;
  }

  /**
   * The kernel that copies rows while it sums them: the vector one whenever it is available, at
   * every size (measured: 0.92&ndash;1.14 of a plain memory copy from 1 MiB to 256 MiB, where the
   * scalar loop gives 0.35 on data in cache and 0.93 on data streamed from memory).
   */
  static RowKernel forCopy() {
    return vectorIfAvailable();
  }

  /**
   * Rows per warm-up pass (1 MiB) and passes per kernel: each kernel's row loop runs 10^5 times.
   */
  private static final int WARM_ROWS = 256;

  private static final int WARM_PASSES = 400;

  /** Runs each available kernel on 1 MiB of its own, interleaved, {@link #WARM_PASSES} times. */
  static void warmUp() {
    List<RowKernel> kernels =
        VECTOR == null
            ? List.of(ScalarRowKernel.INSTANCE)
            : List.of(VECTOR, ScalarRowKernel.INSTANCE);
    // Shared, as a receiver's memory is: kernels compiled on confined segments alone are
    // deoptimized and compiled again at the first shared one.
    try (Arena arena = Arena.ofShared()) {
      MemorySegment rows = arena.allocate((long) WARM_ROWS * RowKernel.ROW_BYTES, 64);
      MemorySegment copy = arena.allocate(rows.byteSize(), 64);
      for (long i = 0; i < rows.byteSize(); i += Long.BYTES) {
        rows.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
      }
      long check = 0;
      for (int pass = 0; pass < WARM_PASSES; pass++) {
        for (RowKernel k : kernels) {
          check ^= k.sumRows(rows, 0, WARM_ROWS).weightedSum();
        }
        check ^= forCopy().copyRows(rows, 0, copy, 0, WARM_ROWS).sum();
        // Pieces of rows (a column block's rows land as such): the partial-row loop.
        for (int r = 0; r < WARM_ROWS; r += 4) {
          long at = (long) r * RowKernel.ROW_BYTES + 8;
          check ^= forCopy().copyWordSum(rows, at, copy, at, 500);
          check ^= forBytes(RowKernel.ROW_BYTES).copyWordSum(rows, at, null, 0, 500);
        }
      }
      if (check == 42) {
        LOG.trace("warm-up checksum {}", check); // keeps the sums from being optimized away
      }
    }
  }

  /** The vector kernel, or the scalar one when the vector kernel is unavailable. */
  static RowKernel vectorIfAvailable() {
    return VECTOR != null ? VECTOR : ScalarRowKernel.INSTANCE;
  }

  /** Why the vector kernel is not used, or null when it is. */
  static Throwable vectorUnavailabilityCause() {
    return VECTOR_UNAVAILABLE;
  }
}
