package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.ExpertPlacement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.transport.kit.RoutingTransport;
import java.time.Duration;
import java.util.Map;

/** Builds workers and the pieces they share from a {@link WorkerSpec}. */
public final class Workers {
  private Workers() {}

  /**
   * A trainer or receiver worker for the spec publishing or refitting one step at a time ({@code mx
   * publish}).
   */
  public static Worker create(WorkerSpec spec) {
    return create(spec, false);
  }

  /**
   * A trainer or receiver worker for the spec; with {@code versions} (as {@code mx demo} runs them)
   * trainers publish every step as a weight version and receivers follow those versions
   * (docs/VERSIONS.md).
   */
  public static Worker create(WorkerSpec spec, boolean versions) {
    return switch (spec.role()) {
      case "trainer" -> new TrainerWorker(spec, versions);
      case "receiver" -> new InferenceWorker(spec, versions);
      default ->
          throw new IllegalArgumentException(
              "unknown worker role '" + spec.role() + "' (trainer or receiver)");
    };
  }

  /** The transport session (agent name) of a trainer rank; also what errors name. */
  static String trainerSession(WorkerSpec spec, int rank) {
    return "trainer-" + rank;
  }

  /**
   * The transport session (agent name) of an inference rank: {@code receiver-N} in the first group,
   * {@code group<G>-receiver-N} in the others; also what its dump file and lease are named by.
   */
  static String receiverSession(WorkerSpec spec) {
    int g = spec.inferenceGroup().index();
    return (g == 0 ? "" : "group" + g + "-") + "receiver-" + spec.rank();
  }

  /** The identity under which inference group {@code group} serves its installed weights. */
  static String installedIdentity(WorkerSpec spec, int group) {
    return spec.identity() + "/installed-group-" + group;
  }

  /**
   * The identity an inference rank reads: the trainer job's, or, in a group reading installed
   * weights ({@code --serve-installed}), its source group's ({@link
   * WorkerSpec.InferenceGroup#sourceGroup}).
   */
  static String sourceIdentity(WorkerSpec spec) {
    WorkerSpec.InferenceGroup g = spec.inferenceGroup();
    return g.readsInstalled() ? installedIdentity(spec, g.sourceGroup()) : spec.identity();
  }

  /**
   * The publishers an inference rank expects behind {@link #sourceIdentity}: the trainer ranks
   * declaring the trainer topology, or the serving group's ranks declaring {@link
   * #installedTopology}.
   */
  static dev.mx.metadata.Discovery.Expectation sourceExpectation(WorkerSpec spec) {
    return spec.inferenceGroup().readsInstalled()
        ? new dev.mx.metadata.Discovery.Expectation(
            inferenceTopology(spec).worldSize(), installedTopology(spec))
        : new dev.mx.metadata.Discovery.Expectation(
            spec.trainerWorldSize(), trainerTopology(spec).toString());
  }

  /** What an inference group serving its installed weights declares, and its readers expect. */
  static String installedTopology(WorkerSpec spec) {
    return "vllm " + inferenceTopology(spec) + " (installed)";
  }

  static Transport transport(WorkerSpec spec, String session) {
    TransportConfig config = new TransportConfig(session, readTimeout(spec), Map.of());
    if (spec.transport().equals("auto")) {
      // Every available transport, routed per peer: shm to peers on this host, ucx to the others.
      return RoutingTransport.open(config);
    }
    return TransportProvider.registry().select(spec.transport()).create(config);
  }

  static TrainerTopology trainerTopology(WorkerSpec spec) {
    int fsdp = spec.trainer().getOrDefault("fsdp", 1);
    if (fsdp > 1) {
      return new TrainerTopology.Fsdp(fsdp);
    }
    return TrainerTopology.Megatron.of(spec.trainer());
  }

  /**
   * The vLLM parameters of the spec's inference rank, experts placed as {@link
   * WorkerSpec#expertMap()} says.
   */
  static VllmLayout inferenceLayout(WorkerSpec spec) {
    ModelArchitecture model = ModelConfigs.load(spec.model());
    ExpertPlacement placement =
        spec.expertMap() == null ? null : ExpertPlacement.parse(spec.expertMap(), model);
    return new VllmLayout(
        model, inferenceTopology(spec), spec.rank(), Fp8Format.receiveDtype(spec), placement);
  }

  static InferenceTopology inferenceTopology(WorkerSpec spec) {
    return new InferenceTopology(
        spec.inference().getOrDefault("tp", 1), spec.inference().getOrDefault("ep", 1));
  }

  /** The overall cap on a wait ({@code --timeout}), or null when none was set. */
  static Duration cap(WorkerSpec spec) {
    return spec.timeoutSeconds() > 0 ? seconds(spec.timeoutSeconds()) : null;
  }

  /** How long a peer waited on may make no progress ({@code --stall-limit}, else the setting). */
  static Duration stallLimit(WorkerSpec spec) {
    return spec.stallLimitSeconds() > 0
        ? seconds(spec.stallLimitSeconds())
        : dev.mx.metadata.progress.ProgressSettings.stallLimit(dev.mx.api.util.Settings.system());
  }

  /**
   * The bound of one wire call or discovery: the cap when one was set, else the stall limit (a read
   * that moves nothing for that long has stalled).
   */
  static Duration readTimeout(WorkerSpec spec) {
    Duration cap = cap(spec);
    return cap != null ? cap : stallLimit(spec);
  }

  static Duration seconds(double s) {
    return Duration.ofMillis(Math.max(1, (long) (s * 1000)));
  }

  /** The short label of a dtype option ({@code bf16}, {@code f16}, {@code f32}, ...). */
  static String dtypeLabel(String option) {
    DType fp8 = OptionChecks.fp8Cast(option);
    return (fp8 != null ? fp8 : DType.parse(option)).shortName();
  }

  /** The model's own dtype ({@code torch_dtype} of its config), as a short label. */
  static String modelDtype(String model) {
    return ModelConfigs.load(model).torchDtype().orElse(DType.BF16).shortName();
  }
}
