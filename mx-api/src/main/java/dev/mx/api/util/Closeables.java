package dev.mx.api.util;

import java.util.List;

/** Closes several resources, keeping the first failure and attaching the rest as suppressed. */
public final class Closeables {
  private Closeables() {}

  /**
   * Closes each resource in the given order (pass them in reverse creation order), even when some
   * fail. Null entries are skipped.
   *
   * @throws RuntimeException the first failure (wrapped if checked), with later ones suppressed
   */
  public static void closeAll(List<? extends AutoCloseable> resources) {
    Throwable first = null;
    for (AutoCloseable r : resources) {
      if (r == null) {
        continue;
      }
      try {
        r.close();
      } catch (Throwable t) {
        if (first == null) {
          first = t;
        } else {
          first.addSuppressed(t);
        }
      }
    }
    if (first instanceof RuntimeException re) {
      throw re;
    }
    if (first instanceof Error err) {
      throw err;
    }
    if (first != null) {
      throw new IllegalStateException("close failed: " + first.getMessage(), first);
    }
  }

  /** Varargs form of {@link #closeAll(List)}. */
  public static void closeAll(AutoCloseable... resources) {
    closeAll(java.util.Arrays.asList(resources));
  }
}
