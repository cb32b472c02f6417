package dev.mx.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** What this process inherited about signals, read from {@code /proc/self/status} (Linux). */
public final class Signals {
  /** {@code SIGINT}. */
  public static final int SIGINT = 2;

  private Signals() {}

  /**
   * Whether signal {@code signo} is ignored by this process (its bit in the {@code SigIgn} mask). A
   * JVM started as a background job of a non-interactive shell (or under nohup) inherits SIGINT
   * ignored and passes that on to its children, which then never see it; tests that send SIGINT
   * check this first. False where the mask is not there (not Linux).
   */
  public static boolean isIgnored(int signo) throws IOException {
    if (signo < 1 || signo > 64) {
      throw new IllegalArgumentException("signal number " + signo + " is not in 1..64");
    }
    Path status = Path.of("/proc/self/status");
    if (!Files.isReadable(status)) {
      return false;
    }
    for (String line : Files.readAllLines(status)) {
      if (line.startsWith("SigIgn:")) {
        long mask = Long.parseUnsignedLong(line.substring("SigIgn:".length()).trim(), 16);
        return (mask & (1L << (signo - 1))) != 0;
      }
    }
    return false;
  }
}
