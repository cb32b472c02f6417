package dev.mx.cli.demo;

import java.time.Duration;
import java.util.Locale;

/** Progress lines on stderr; a redrawn bar when stderr is a terminal. */
final class Progress {
  /** Off a terminal, a changed "waiting on" line is printed at most this often. */
  private static final long WAITING_LINE_NANOS = Duration.ofSeconds(10).toNanos();

  private final java.io.PrintStream err;
  private final boolean terminal;
  private String current = "";
  private String waitingOn = "";
  private long waitingPrinted;

  Progress(java.io.PrintStream err, boolean terminal) {
    this.err = err;
    this.terminal = terminal;
  }

  /**
   * What the receivers wait on now (the trainer ranks' phases): appended to the step line on a
   * terminal, else printed when it changed, at most every 10 s.
   */
  synchronized void waitingOn(String summary) {
    if (summary.equals(waitingOn) || current.isEmpty()) {
      return;
    }
    waitingOn = summary;
    if (terminal) {
      err.print("\r\033[K" + current + " | waiting on " + summary);
      err.flush();
    } else if (System.nanoTime() - waitingPrinted > WAITING_LINE_NANOS) {
      waitingPrinted = System.nanoTime();
      err.println("mx demo:   waiting on " + summary);
    }
  }

  synchronized void note(String line) {
    if (terminal) {
      err.print("\r\033[K");
    }
    err.println("mx demo: " + line);
  }

  synchronized void step(int step, int total, String what) {
    int width = 20;
    int filled = (int) Math.round(width * (double) step / total);
    String bar = "[" + "#".repeat(filled) + "-".repeat(width - filled) + "]";
    // step == total is the finished run: a full bar, "step N/N".
    String line =
        String.format(
            Locale.ROOT, "%s step %d/%d: %s", bar, Math.min(step + 1, total), total, what);
    current = step >= total ? "" : line;
    waitingOn = "";
    if (terminal) {
      err.print("\r\033[K" + line);
      err.flush();
    } else {
      err.println("mx demo: " + line);
    }
  }

  synchronized void done() {
    current = "";
    if (terminal) {
      err.print("\r\033[K");
      err.flush();
    }
  }
}
