package dev.mx.cli.demo;

import dev.mx.api.transport.TransportProvider;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Options of {@code mx publish} and {@code mx receive} beyond the job itself: where the two sides
 * meet.
 */
final class RoleOptions extends JobOptions {

  @Option(
      names = "--metadata",
      required = true,
      description = "Metadata store URI: file:DIR (one host) or redis://host:port (many hosts).")
  String metadata;

  @Option(
      names = "--identity",
      description = "Name the trainers publish under (default mx-<model>).")
  String identity;

  @Option(
      names = "--heartbeat",
      defaultValue = "5",
      description =
          "Publisher heartbeat seconds; a publisher is live for 3 of them (default ${DEFAULT-VALUE}).")
  double heartbeatSeconds;

  WorkerSpec spec(CommandLine.Model.CommandSpec cmd, String role, int rank) {
    Map<String, Integer> t = Topology.trainer("--trainer", trainer);
    Map<String, Integer> i = Topology.parse("--inference", inference, "tp", "ep");
    String tDtype = trainerLabel();
    // auto: route per peer over every available transport (shm on this host, ucx across hosts).
    String chosen =
        transport.equalsIgnoreCase("auto")
            ? "auto"
            : TransportProvider.registry().select(transport).name();
    return new WorkerSpec(
            role,
            rank,
            model,
            t,
            i,
            chosen,
            metadata,
            identity != null ? identity : "mx-" + model,
            tDtype,
            inferenceLabel(tDtype),
            wire,
            verify,
            capSeconds(),
            heartbeatSeconds)
        .withDevice(deviceKind(cmd))
        .withStallLimit(stallSeconds())
        .withExpertMap(expertMapJson())
        .withDelta(changed, noDelta);
  }

  /**
   * {@code --device}; weight versions ({@code --steps}, {@code --follow}) keep their buffers in
   * host memory.
   */
  private dev.mx.api.transport.MemoryKind deviceKind(CommandLine.Model.CommandSpec cmd) {
    dev.mx.api.transport.MemoryKind kind = DeviceCheck.kind(cmd, device);
    CommandLine.ParseResult parsed = cmd.commandLine().getParseResult();
    for (String versioned : java.util.List.of("--steps", "--follow")) {
      if (kind.isDevice() && parsed != null && parsed.hasMatchedOption(versioned)) {
        throw new CommandLine.ParameterException(
            cmd.commandLine(),
            "--device "
                + kind
                + " cannot be combined with "
                + versioned
                + ": weight versions keep their buffers in host memory");
      }
    }
    return kind;
  }
}
