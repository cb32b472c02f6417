package dev.mx.cli.demo;

import dev.mx.cli.Json;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mx receive}: one inference rank on this host. Discovers the trainers published under the
 * same identity, refits {@code --steps} times, verifies and installs, and prints each step's
 * metrics.
 */
@Command(
    name = "receive",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Run one inference rank: discover the trainers, refit, verify and install.",
      "Pair with 'mx publish' ranks started with the same --model, --trainer, --metadata and --identity."
    })
public final class ReceiveCommand implements Callable<Integer> {

  @CommandLine.Mixin RoleOptions role;

  @CommandLine.Mixin SourceOption source;

  @Option(names = "--rank", required = true, description = "This inference rank.")
  int rank;

  @Option(
      names = "--steps",
      defaultValue = "1",
      description = "Refits to run (default ${DEFAULT-VALUE}).")
  int steps;

  @Option(
      names = "--dump",
      description = "Write receiver-<rank>.safetensors with the installed weights here.")
  Path dump;

  @Option(names = "--json", description = "Print the metrics as JSON.")
  boolean json;

  @Option(
      names = "--baseline",
      description = "Also measure a memory copy and report each step's rate against it.")
  boolean baseline;

  @Option(
      names = "--follow",
      description =
          "Install each new READY weight version as it appears (--steps N of them,"
              + " else until interrupted), reporting the step each carries (pair with 'mx publish --steps').")
  boolean follow;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    WorkerSpec ws = role.spec(spec, "receiver", rank).withSource(source.resolved(spec));
    // Insertion-ordered: --json documents keep one key order from run to run.
    Map<String, Object> run = new LinkedHashMap<>();
    run.put("model", ws.model());
    run.put("trainer", ws.trainer());
    run.put("inference", ws.inference());
    run.put("trainer_dtype", ws.trainerDtype());
    run.put("inference_dtype", ws.inferenceDtype());
    run.put("transport", ws.transport());
    run.put("wire", ws.wire());
    run.put("verify", ws.verify());
    DemoReport report = new DemoReport(run);
    report.command = "mx receive";
    report.trainerRanks = ws.trainerWorldSize();
    report.baselineGbps = baseline ? DemoReport.memoryCopyGbps() : 0;
    try (Worker w = follow ? null : Workers.create(ws)) {
      if (follow) {
        // Weight versions (docs/VERSIONS.md): each row is an installed version, numbered by its
        // step.
        VersionedReceiver.run(
            ws,
            spec.commandLine().getParseResult().hasMatchedOption("--steps") ? steps : null,
            dump,
            report,
            spec.commandLine().getErr());
      } else {
        if (w.start().get("checkpoint") instanceof Map<?, ?> c) {
          report.addCheckpoint(rank, c);
          report.lastStep = ((Number) c.get("step")).longValue();
        }
        for (int s = 0; s < steps; s++) {
          Map<String, Object> m = w.step(s);
          report.addStep(s, rank, DemoReport.withInstallTime(m, w.commit(s)));
          report.lastStep = s;
        }
        if (dump != null) {
          w.dump(dump);
        }
      }
    } catch (Exception e) {
      report.fail(e.getMessage() == null ? e.toString() : e.getMessage());
    }
    if (json) {
      Json.print(spec.commandLine().getOut(), report.toJson());
    } else {
      report.printTables(spec.commandLine().getOut());
    }
    if (!report.ok) {
      spec.commandLine().getErr().println("mx receive: error: " + report.error);
      return 1;
    }
    return 0;
  }
}
