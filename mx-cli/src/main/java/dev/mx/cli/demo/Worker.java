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
}
