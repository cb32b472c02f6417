package dev.mx.cli.demo;

import dev.mx.cli.Json;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mx worker --spec JSON}: the child side of {@code mx demo}; driven by JSON lines on stdin.
 */
@Command(
    name = "worker",
    hidden = true,
    description = "Run one demo worker driven over stdin/stdout (used by mx demo).")
public final class WorkerCommand implements Callable<Integer> {

  @Option(names = "--spec", required = true, description = "The worker spec as JSON.")
  String spec;

  @Option(
      names = "--versions",
      description = "Publish and follow weight versions (as mx demo runs its workers).")
  boolean versions;

  @Override
  public Integer call() throws Exception {
    WorkerSpec s = Json.mapper().readValue(spec, WorkerSpec.class);
    return WorkerHost.serve(Workers.create(s, versions));
  }
}
