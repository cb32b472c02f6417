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

  @Option(
      names = "--version-id",
      paramLabel = "ID",
      description =
          "With --follow: install the weight version with this id first, whether or not the store"
              + " lists it (over mx://, a RefitService version uid, as a ModelExpress orchestrator"
              + " hands one to its generators; its tables may carry no publisher_step), then"
              + " follow newer versions while --steps allows.")
  String versionId;

  @Option(
      names = "--serve-installed",
      description =
          "With --follow: serve each installed (verified) version to other engines, as a weight"
              + " version of <identity>/installed-group-0 (this rank its slot, the engine declaring"
              + " 'vllm tp=N,ep=M (installed)'); a reader leases it, and the next version is copied"
              + " in only once no lease holds it. Engines that quantize what they install cannot"
              + " serve.")
  boolean serveInstalled;

  @Option(
      names = "--from-installed",
      description =
          "With --follow: read every version from an engine of this --inference topology running"
              + " with --serve-installed under the same --identity, instead of the trainers."
              + " Its ranks are named group1-receiver-<rank> (transport session, lease, dump).")
  boolean fromInstalled;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  /**
   * {@code --serve-installed} is group 0 of two that serves, {@code --from-installed} group 1 that
   * reads it ({@link WorkerSpec.InferenceGroup}).
   */
  private WorkerSpec.InferenceGroup fanOutGroup(WorkerSpec ws) {
    CommandLine cl = spec.commandLine();
    if (!follow) {
      throw new CommandLine.ParameterException(
          cl,
          (serveInstalled ? "--serve-installed" : "--from-installed")
              + " follows weight versions: add --follow");
    }
    if (serveInstalled && fromInstalled) {
      throw new CommandLine.ParameterException(
          cl,
          "--serve-installed and --from-installed: an engine serves or reads installed weights");
    }
    if (serveInstalled
        && Fp8Format.isFp8Block(ws.inferenceDtype())
        && !Fp8Format.isFp8Block(ws.trainerDtype())) {
      throw new CommandLine.ParameterException(
          cl,
          "--serve-installed: this engine quantizes what it installs (--inference-dtype "
              + ws.inferenceDtype()
              + "), so its weights are not the bytes it read and cannot be served");
    }
    if (fromInstalled && ws.checkpointDir() != null) {
      throw new CommandLine.ParameterException(
          cl, "--from-installed reads its first version from the serving engine; drop --source");
    }
    return new WorkerSpec.InferenceGroup(serveInstalled ? 0 : 1, 2, true);
  }

  /** Prints the report (JSON or tables); returns true. */
  private boolean print(DemoReport report) {
    if (json) {
      Json.print(spec.commandLine().getOut(), report.toJson());
    } else {
      report.printTables(spec.commandLine().getOut());
    }
    spec.commandLine().getOut().flush();
    return true;
  }

  @Override
  public Integer call() throws Exception {
    if (versionId != null && (!follow || versionId.isBlank())) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          versionId.isBlank()
              ? "--version-id: the id is empty"
              : "--version-id names a weight version to install: add --follow");
    }
    WorkerSpec ws = role.spec(spec, "receiver", rank).withSource(source.resolved(spec));
    if (serveInstalled || fromInstalled) {
      ws = ws.withGroup(fanOutGroup(ws));
    }
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
    // A serving engine reports once its versions are installed, then serves until interrupted.
    boolean[] printed = {false};
    try (Worker w = follow ? null : Workers.create(ws)) {
      if (follow) {
        // Weight versions (docs/VERSIONS.md): each row is an installed version, numbered by its
        // step.
        VersionedReceiver.run(
            ws,
            spec.commandLine().getParseResult().hasMatchedOption("--steps") ? steps : null,
            versionId,
            dump,
            report,
            spec.commandLine().getErr(),
            () -> printed[0] = print(report));
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
    if (!printed[0]) {
      print(report);
    }
    if (!report.ok) {
      spec.commandLine().getErr().println("mx receive: error: " + report.error);
      return 1;
    }
    return 0;
  }
}
