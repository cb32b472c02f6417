package dev.mx.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A tmpfs of a few KiB mounted for one test: a real file system that runs out of space. Mounting
 * needs root (or CAP_SYS_ADMIN); where it is refused the test is skipped with the cause.
 */
public final class SmallTmpfs implements AutoCloseable {
  private final Path dir;
  private final AtomicBoolean mounted = new AtomicBoolean(true);

  private SmallTmpfs(Path dir) {
    this.dir = dir;
  }

  /**
   * Mounts a tmpfs of {@code size} (mount's syntax: {@code 64k}, {@code 1m}) on the existing
   * directory {@code dir}, or skips the calling test saying why it cannot.
   */
  public static SmallTmpfs mount(Path dir, String size) throws InterruptedException {
    String cause = run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", dir.toString());
    assumeTrue(
        cause == null, "skipped: cannot mount a " + size + " tmpfs on " + dir + ": " + cause);
    return new SmallTmpfs(dir);
  }

  /** Where it is mounted. */
  public Path dir() {
    return dir;
  }

  /** Unmounts it, once. */
  @Override
  public void close() throws IOException {
    if (mounted.compareAndSet(true, false)) {
      String cause;
      try {
        cause = run("umount", dir.toString());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        cause = "interrupted";
      }
      if (cause != null) {
        throw new IOException("umount " + dir + ": " + cause);
      }
    }
  }

  /** Runs a command; null when it succeeded, else what it printed (or why it could not start). */
  private static String run(String... command) throws InterruptedException {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return String.join(" ", command) + " did not finish within 60 s";
      }
      return p.exitValue() == 0 ? null : "exit " + p.exitValue() + ": " + out;
    } catch (IOException e) {
      return e.getMessage();
    }
  }
}
