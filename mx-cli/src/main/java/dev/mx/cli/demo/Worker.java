package dev.mx.cli.demo;

import java.nio.file.Path;
import java.util.Map;

/**
 * One role of a refit job (a trainer rank or an inference rank), driven step by step either in this
 * JVM or in a child JVM through {@link WorkerHost}. Every method returns a JSON-like map for the
 * report.
 */
public interface Worker extends AutoCloseable {

  /** Allocates, registers, publishes or discovers; returns facts for the report. */
  Map<String, Object> start() throws Exception;

  /** Runs one step (trainers: write and republish step weights; receivers: refit). */
  Map<String, Object> step(long step) throws Exception;

  /**
   * Makes the step's staged weights live (receivers). The orchestrator commits only after every
   * receiver staged and verified the step, so one failing rank leaves every rank on the previous
   * step.
   */
  default Map<String, Object> commit(long step) throws Exception {
    return Map.of();
  }

  /**
   * After a failed step, puts the rank back on step {@code to}, the last one every rank installed:
   * a receiver writing in place that installed the failed step re-reads {@code to}. Returns the
   * step now installed ({@code step}) and, for weights left torn, the step that tore them ({@code
   * torn}).
   */
  default Map<String, Object> rollback(long to) throws Exception {
    throw new IllegalArgumentException("this worker cannot roll back");
  }

  /** Injects a fault into this worker (trainers only): {@code corrupt}. */
  default Map<String, Object> fault(String kind) throws Exception {
    throw new IllegalArgumentException("this worker does not inject fault '" + kind + "'");
  }

  /** Writes what the worker holds (receivers: installed weights) into {@code dir}. */
  default Map<String, Object> dump(Path dir) throws Exception {
    return Map.of();
  }

  @Override
  void close();

  /**
   * Runs one orchestrator command ({@code start}, {@code step}, {@code commit}, {@code rollback},
   * {@code fault}, {@code dump}) on {@code worker}; null for {@code exit}.
   */
  static Map<String, Object> run(Worker worker, Map<String, Object> cmd) throws Exception {
    String op = String.valueOf(cmd.get("cmd"));
    return switch (op) {
      case "start" -> worker.start();
      case "step" -> worker.step(((Number) cmd.get("step")).longValue());
      case "commit" -> worker.commit(((Number) cmd.get("step")).longValue());
      case "rollback" -> worker.rollback(((Number) cmd.get("to")).longValue());
      case "fault" -> worker.fault(String.valueOf(cmd.get("kind")));
      case "dump" -> worker.dump(Path.of(String.valueOf(cmd.get("dir"))));
      case "exit" -> null;
      default -> throw new IllegalArgumentException("unknown worker command '" + op + "'");
    };
  }
}
