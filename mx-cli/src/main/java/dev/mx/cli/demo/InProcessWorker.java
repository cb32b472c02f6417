package dev.mx.cli.demo;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A worker on a thread of this JVM (for {@code --in-process}), behind the same handle as a child.
 */
final class InProcessWorker implements WorkerHandle {
  private final String name;
  private final Worker worker;
  private final ExecutorService thread;

  InProcessWorker(String name, Worker worker) {
    this.name = name;
    this.worker = worker;
    this.thread =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "mx-demo-" + name.replace(' ', '-'));
              t.setDaemon(true);
              return t;
            });
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public Map<String, Object> call(Map<String, Object> command, Duration timeout) throws Exception {
    String op = String.valueOf(command.get("cmd"));
    Future<Map<String, Object>> f =
        thread.submit(
            () -> {
              if (op.equals("exit")) {
                throw new IllegalArgumentException("unknown worker command 'exit'");
              }
              return Worker.run(worker, command);
            });
    try {
      return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof Exception ex) {
        throw new dev.mx.api.error.MxException(name + ": " + ex.getMessage(), ex);
      }
      throw e;
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new dev.mx.api.error.MxException(
          name + " did not finish '" + op + "' within " + timeout.toSeconds() + " s");
    }
  }

  @Override
  public void kill() {
    throw new UnsupportedOperationException(
        "cannot kill an in-process worker; run without --in-process");
  }

  @Override
  public void stall() {
    throw new UnsupportedOperationException(
        "cannot stall an in-process worker; run without --in-process");
  }

  @Override
  public boolean isAlive() {
    return !thread.isShutdown();
  }

  @Override
  public void close() {
    try {
      thread.submit(worker::close).get(30, TimeUnit.SECONDS);
    } catch (Exception ignored) {
      // Best effort: the JVM is about to report or exit.
    } finally {
      thread.shutdownNow();
    }
  }
}
