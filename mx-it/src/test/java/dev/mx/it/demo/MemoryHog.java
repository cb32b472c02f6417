package dev.mx.it.demo;

import dev.mx.testing.Eventually;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Another job on the host: a process that takes 256 MiB of touched memory, frees it, and again,
 * printing a line per cycle, until it is closed. A test runs the demo beside it to show the demo's
 * memory report does not depend on what the rest of the host does.
 */
final class MemoryHog implements AutoCloseable {
  private static final String SCRIPT =
      """
      import time
      n = 0
      while True:
          block = bytearray(b'x') * (256 << 20)
          n += 1
          print('cycle', n, flush=True)
          time.sleep(0.2)
          del block
          time.sleep(0.2)
      """;

  private final Process process;
  private final AtomicInteger cycles = new AtomicInteger();

  private MemoryHog(Process process) {
    this.process = process;
    Thread.ofPlatform()
        .daemon()
        .name("memory-hog-out")
        .start(
            () -> {
              try (BufferedReader r =
                  new BufferedReader(
                      new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = r.readLine(); line != null; line = r.readLine()) {
                  if (line.startsWith("cycle")) {
                    cycles.incrementAndGet();
                  }
                }
              } catch (IOException e) {
                // The process was closed.
              }
            });
  }

  /** Starts the hog and waits for its first allocation. */
  static MemoryHog start() throws IOException {
    Process p =
        new ProcessBuilder("python3", "-c", SCRIPT)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    MemoryHog hog = new MemoryHog(p);
    Eventually.await(
        Duration.ofSeconds(60), "the memory hog's first allocation", () -> hog.cycles.get() >= 1);
    return hog;
  }

  /** Fails unless the hog took and freed memory again while the test ran (its figure would lie). */
  void requireRan() {
    Eventually.await(
        Duration.ofSeconds(60),
        "the memory hog to allocate and free again during the run",
        () -> cycles.get() >= 3 && process.isAlive());
  }

  @Override
  public void close() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(10, TimeUnit.SECONDS);
  }
}
