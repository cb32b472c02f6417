package dev.mx.cli.demo;

import picocli.CommandLine.Option;

/**
 * The options that describe a refit job, shared by {@code mx demo}, {@code mx publish} and {@code
 * mx receive} (picocli inherits annotated fields): every side of one job must agree on them.
 */
abstract class JobOptions {

  @Option(
      names = "--model",
      defaultValue = "llama-3.2-1b",
      completionCandidates = Candidates.Models.class,
      description =
          "A bundled model (${COMPLETION-CANDIDATES}) or the path to a config.json (default ${DEFAULT-VALUE}).")
  String model;

  @Option(
      names = "--trainer",
      defaultValue = "tp=4,pp=1,ep=1",
      description = "Trainer topology: tp=N,pp=N,ep=N or fsdp=N (default ${DEFAULT-VALUE}).")
  String trainer;

  @Option(
      names = "--inference",
      defaultValue = "tp=2,ep=1",
      description = "Inference topology: tp=N,ep=1|N (default ${DEFAULT-VALUE}).")
  String inference;

  @Option(
      names = "--transport",
      defaultValue = "auto",
      completionCandidates = Candidates.Transports.class,
      description =
          "One of ${COMPLETION-CANDIDATES} (default ${DEFAULT-VALUE}: the best available; publish/receive route each peer over shm or ucx; see mx transports).")
  String transport;

  @Option(
      names = "--wire",
      defaultValue = "fused",
      description = "fused or phased (default ${DEFAULT-VALUE}).")
  String wire;

  @Option(
      names = "--verify",
      defaultValue = "all",
      description =
          "all (every installed byte verified), strict, or the"
              + " opt-outs whole-shards and off, which report the bytes they install unverified (default ${DEFAULT-VALUE}).")
  String verify;

  @Option(
      names = "--trainer-dtype",
      completionCandidates = Candidates.Dtypes.class,
      description =
          "Dtype the trainers publish: ${COMPLETION-CANDIDATES} (default: the model's torch_dtype).")
  String trainerDtype;

  @Option(
      names = "--inference-dtype",
      completionCandidates = Candidates.Dtypes.class,
      description =
          "Dtype of the inference parameters: ${COMPLETION-CANDIDATES} (default: the trainer dtype).")
  String inferenceDtype;

  @Option(
      names = "--device",
      defaultValue = "host",
      description =
          "Where the weights live: host, or cuda / cuda:N"
              + " (publisher regions, receive buffers and staging in GPU memory, re-slice, casts and digests on the GPU;"
              + " transport auto means cuda-ipc then) (default ${DEFAULT-VALUE}).")
  String device;

  @Option(
      names = "--timeout",
      defaultValue = "60",
      description =
          "Seconds a wire call or discovery may take, at most 1000000 (default ${DEFAULT-VALUE}).")
  double timeoutSeconds;
}
