package dev.mx.cli.demo;

import dev.mx.transport.shm.Shm;
import dev.mx.transport.shm.ShmLeftovers;
import java.io.PrintStream;

/**
 * Gives back the shared memory that killed workers left (IP05, IP06): a SIGKILLed process cannot
 * delete its {@code /dev/shm} files. Called at a run's start (for earlier runs, and to load the shm
 * classes before any shutdown hook needs them) and at its end.
 */
final class ShmCleanup {
  private ShmCleanup() {}

  /** Deletes the shm files of dead processes; 0 when that cannot be done (during shutdown, say). */
  static int reclaim() {
    try {
      return ShmLeftovers.reclaim();
    } catch (RuntimeException | LinkageError e) {
      return 0;
    }
  }

  /** As {@link #reclaim}, saying on {@code err} how many files it removed, if any. */
  static void reclaimAndSay(PrintStream err) {
    int reclaimed = reclaim();
    if (reclaimed > 0) {
      err.println(
          "mx demo: removed "
              + reclaimed
              + " shared-memory file(s) that killed workers left in "
              + Shm.directory());
    }
  }
}
