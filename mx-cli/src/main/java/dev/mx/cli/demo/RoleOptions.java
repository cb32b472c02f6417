package dev.mx.cli.demo;

import dev.mx.api.transport.TransportProvider;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** Options shared by {@code mx publish} and {@code mx receive}: both sides must agree on them. */
final class RoleOptions {

  @Option(names = "--model", defaultValue = "llama-3.2-1b", description = "Model name or path to a config.json (default ${DEFAULT-VALUE}).")
  String model;

  @Option(names = "--trainer", defaultValue = "tp=4,pp=1,ep=1", description = "Trainer topology (default ${DEFAULT-VALUE}).")
  String trainer;

  @Option(names = "--inference", defaultValue = "tp=2,ep=1", description = "Inference topology (default ${DEFAULT-VALUE}).")
  String inference;

  @Option(names = "--metadata", required = true, description = "Metadata store URI: file:DIR (one host) or redis://host:port (many hosts).")
  String metadata;

  @Option(names = "--transport", defaultValue = "auto", description = "Transport (default ${DEFAULT-VALUE}: the best available).")
  String transport;

  @Option(names = "--identity", description = "Name the trainers publish under (default mx-<model>).")
  String identity;

  @Option(names = "--trainer-dtype", description = "Dtype the trainers publish (default: the model's).")
  String trainerDtype;

  @Option(names = "--inference-dtype", description = "Dtype of the inference parameters (default: the trainer dtype).")
  String inferenceDtype;

  @Option(names = "--wire", defaultValue = "fused", description = "fused or phased (default ${DEFAULT-VALUE}).")
  String wire;

  @Option(names = "--verify", defaultValue = "whole-shards", description = "strict, whole-shards or off (default ${DEFAULT-VALUE}).")
  String verify;

  @Option(names = "--timeout", defaultValue = "60", description = "Seconds a wire call or discovery may take (default ${DEFAULT-VALUE}).")
  double timeoutSeconds;

  @Option(names = "--heartbeat", defaultValue = "5", description = "Publisher heartbeat seconds; a publisher is live for 3 of them (default ${DEFAULT-VALUE}).")
  double heartbeatSeconds;

  WorkerSpec spec(CommandLine.Model.CommandSpec cmd, String role, int rank) {
    Map<String, Integer> t = Topology.parse("--trainer", trainer, "tp", "pp", "ep", "fsdp");
    Map<String, Integer> i = Topology.parse("--inference", inference, "tp", "ep");
    String tDtype = trainerDtype != null ? Workers.dtypeLabel(trainerDtype) : Workers.modelDtype(model);
    String chosen = TransportProvider.registry().select(transport).name();
    return new WorkerSpec(role, rank, model, t, i, chosen, metadata, identity != null ? identity : "mx-" + model,
        tDtype, inferenceDtype != null ? Workers.dtypeLabel(inferenceDtype) : tDtype, wire, verify, timeoutSeconds,
        heartbeatSeconds);
  }
}
