package dev.mx.cli.demo;

import java.time.Duration;
import java.util.Map;

/** The orchestrator's view of a worker, wherever it runs. */
interface WorkerHandle extends AutoCloseable {

  /** e.g. {@code trainer 2} or {@code receiver 0}. */
  String name();

  /** Sends one command and waits for its reply; failures name the worker. */
  Map<String, Object> call(Map<String, Object> command, Duration timeout) throws Exception;

  /**
   * Kills the worker at once (SIGKILL, fault injection) and returns once it is gone, so what comes
   * next sees a dead process, not a dying one; unsupported in-process.
   */
  void kill();

  /** Stops the worker from answering (SIGSTOP) and resumes it on close. */
  void stall();

  /** True while the worker runs. */
  boolean isAlive();

  @Override
  void close();
}
