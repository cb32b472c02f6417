package dev.mx.cli.demo;

import java.io.PrintStream;
import java.util.Locale;

/**
 * Progress of a long one-rank command on stderr: each phase when it starts, and every {@value
 * #EVERY_S} s while it lasts, with its elapsed time, so writing and digesting a large model is
 * never minutes of silence.
 */
final class PhaseTicker implements AutoCloseable {
  static final int EVERY_S = 10;

  private final String prefix;
  private final PrintStream err;
  private final Thread ticker;
  private String phase;
  private long phaseStart;
  private boolean closed;

  PhaseTicker(String prefix, PrintStream err) {
    this.prefix = prefix;
    this.err = err;
    this.ticker = Thread.ofPlatform().daemon().name("mx-progress").start(this::loop);
  }

  /** The work now under way, printed at once. */
  synchronized void phase(String what) {
    phase = what;
    phaseStart = System.nanoTime();
    err.println(prefix + what);
    err.flush();
  }

  private void loop() {
    try {
      while (true) {
        Thread.sleep(EVERY_S * 1000L);
        synchronized (this) {
          if (closed) {
            return;
          }
          if (phase != null) {
            err.println(
                prefix
                    + phase
                    + String.format(
                        Locale.ROOT, " (%.0f s so far)", (System.nanoTime() - phaseStart) / 1e9));
            err.flush();
          }
        }
      }
    } catch (InterruptedException e) {
      // Closed.
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    ticker.interrupt();
  }
}
