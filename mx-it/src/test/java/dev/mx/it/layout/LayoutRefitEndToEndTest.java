package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.digest.CpuDigestProvider;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.layout.vllm.VllmReference;
import dev.mx.refit.DiscoveredSources;
import dev.mx.refit.Receiver;
import dev.mx.refit.ReceiverConfig;
import dev.mx.refit.VerifyMode;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Real model layouts refit end to end in one JVM: every trainer rank publishes its generator-filled
 * Megatron or FSDP buffers over its own {@code mem} transport; every vLLM receiver rank runs the
 * real {@link Receiver} (planner, wire, re-slice, casts, digest verification) with {@link
 * VllmLayout} as its geometry, and its installer compares every element of every parameter with
 * {@link VllmReference} — the value computed from the generator and the vLLM rules alone, zero for
 * vocabulary padding. Two steps, so the second refit must move the new values.
 */
class LayoutRefitEndToEndTest {

  record Case(
      String model,
      TrainerTopology trainer,
      DType trainerDtype,
      InferenceTopology inference,
      DType inferenceDtype,
      String wire,
      VerifyMode verify) {
    @Override
    public String toString() {
      return model
          + " "
          + trainer
          + " "
          + trainerDtype
          + " -> "
          + inference
          + " "
          + inferenceDtype
          + " "
          + wire
          + " "
          + verify.label();
    }
  }

  static Stream<Case> cases() {
    String f = ReceiverConfig.FUSED;
    String p = ReceiverConfig.PHASED;
    return Stream.of(
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(4, 2, 1),
            DType.F32,
            InferenceTopology.tp(8),
            DType.BF16,
            f,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            DType.BF16,
            InferenceTopology.tp(1),
            DType.BF16,
            p,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Fsdp(3),
            DType.BF16,
            InferenceTopology.tp(2),
            DType.BF16,
            f,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Megatron(1, 2, 1),
            DType.BF16,
            InferenceTopology.tp(4),
            DType.F32,
            f,
            VerifyMode.OFF),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Megatron(4, 1, 1),
            DType.BF16,
            InferenceTopology.tp(8),
            DType.BF16,
            f,
            VerifyMode.STRICT),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Fsdp(2),
            DType.F32,
            InferenceTopology.tp(4),
            DType.BF16,
            p,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-mistral",
            new TrainerTopology.Megatron(2, 2, 1),
            DType.F16,
            InferenceTopology.tp(4),
            DType.F16,
            f,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-deepseek",
            new TrainerTopology.Megatron(2, 2, 2),
            DType.F32,
            new InferenceTopology(2, 4),
            DType.BF16,
            f,
            VerifyMode.ALL),
        new Case(
            "tiny-deepseek",
            new TrainerTopology.Megatron(4, 1, 4),
            DType.BF16,
            InferenceTopology.tp(2),
            DType.BF16,
            p,
            VerifyMode.STRICT),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(2, 1, 2),
            DType.BF16,
            new InferenceTopology(4, 4),
            DType.BF16,
            p,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(1, 2, 2),
            DType.F32,
            InferenceTopology.tp(2),
            DType.BF16,
            f,
            VerifyMode.WHOLE_SHARDS),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Fsdp(3),
            DType.BF16,
            new InferenceTopology(8, 8),
            DType.BF16,
            f,
            VerifyMode.STRICT),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(4, 2, 2),
            DType.BF16,
            InferenceTopology.tp(1),
            DType.BF16,
            f,
            VerifyMode.WHOLE_SHARDS),
        // The default mode verifies every installed byte: scale-out, scale-in, pipeline merge, MoE
        // EP.
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(2, 1, 1),
            DType.BF16,
            InferenceTopology.tp(4),
            DType.BF16,
            f,
            VerifyMode.ALL),
        new Case(
            "tiny-llama",
            new TrainerTopology.Megatron(4, 1, 1),
            DType.BF16,
            InferenceTopology.tp(2),
            DType.BF16,
            f,
            VerifyMode.ALL),
        new Case(
            "tiny-qwen2",
            new TrainerTopology.Megatron(1, 2, 1),
            DType.F32,
            InferenceTopology.tp(1),
            DType.BF16,
            p,
            VerifyMode.ALL),
        new Case(
            "tiny-qwen3-moe",
            new TrainerTopology.Megatron(2, 1, 2),
            DType.BF16,
            new InferenceTopology(4, 4),
            DType.BF16,
            f,
            VerifyMode.ALL),
        new Case(
            "tiny-qwen3",
            new TrainerTopology.Fsdp(3),
            DType.F32,
            InferenceTopology.tp(2),
            DType.F32,
            f,
            VerifyMode.ALL));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void everyReceivedElementEqualsTheReference(Case c) {
    ModelArchitecture model = ModelConfigs.load(c.model());
    CpuDigestProvider digests = new CpuDigestProvider();
    try (TrainerCluster trainers =
        new TrainerCluster(c.trainer().layout(model, c.trainerDtype()))) {
      List<Receiver> receivers = new ArrayList<>();
      List<Transport> transports = new ArrayList<>();
      List<CheckingInstaller> installers = new ArrayList<>();
      List<VllmLayout> geometries = new ArrayList<>();
      try {
        for (long step = 0; step < 2; step++) {
          trainers.fill(step);
          if (step == 0) {
            for (int r = 0; r < c.inference().worldSize(); r++) {
              Transport t = new MemTransportProvider().create(TransportConfig.of("receiver-" + r));
              transports.add(t);
              VllmLayout geometry = new VllmLayout(model, c.inference(), r, c.inferenceDtype());
              CheckingInstaller installer =
                  new CheckingInstaller(
                      new VllmReference(model, c.inference(), r),
                      c.trainerDtype(),
                      c.inferenceDtype());
              installers.add(installer);
              geometries.add(geometry);
              receivers.add(
                  Receiver.builder()
                      .config(
                          ReceiverConfig.defaults()
                              .withWire(c.wire())
                              .withVerify(c.verify())
                              .withRank(r)
                              .withThreads(2))
                      .transport(t)
                      // Answers with the current step's tables, as republishing trainers would.
                      .discovery(
                          timeout ->
                              new DiscoveredSources(
                                  trainers.sources(digests), trainers.peerMetadata()))
                      .geometry(geometry)
                      .installer(installer)
                      .digests(digests)
                      .build());
            }
          }
          for (int r = 0; r < receivers.size(); r++) {
            if (step > 0) {
              // The trainers republished with new digests; a prepared receiver keeps the digests it
              // discovered.
              receivers.get(r).invalidate();
            }
            Map<String, Object> metrics = receivers.get(r).updateWeights(step);
            assertEquals(0L, metrics.get("fallback"), c + " rank " + r + ": " + metrics);
            CheckingInstaller installer = installers.get(r);
            assertEquals(step, installer.lastStep, c + " rank " + r + " installed");
            assertEquals(List.of(), installer.mismatches, c + " rank " + r + " step " + step);
            assertEquals(
                geometries.get(r).params().keySet(),
                installer.installed,
                c + " rank " + r + ": parameters installed");
            if (c.verify() == VerifyMode.STRICT || c.verify() == VerifyMode.ALL) {
              assertEquals(
                  0L, metrics.get("unverifiable_shards"), c + " rank " + r + ": " + metrics);
              assertEquals(
                  0L,
                  metrics.get("unverified_bytes"),
                  c + " rank " + r + ": every installed byte verified");
            }
            if (c.verify() != VerifyMode.OFF) {
              assertTrue(
                  (Long) metrics.get("verified_shards") > 0, c + " rank " + r + ": " + metrics);
            }
          }
        }
      } finally {
        List<AutoCloseable> close = new ArrayList<>(receivers.reversed());
        close.addAll(transports.reversed());
        dev.mx.api.util.Closeables.closeAll(close);
      }
    }
  }

  /** Compares every installed parameter with the reference, element by element. */
  static final class CheckingInstaller implements dev.mx.api.refit.Installer {
    private final VllmReference reference;
    private final DType trainerDtype;
    private final DType inferenceDtype;
    final Set<String> installed = new LinkedHashSet<>();
    long lastStep = -1;
    final List<String> mismatches = new ArrayList<>();

    CheckingInstaller(VllmReference reference, DType trainerDtype, DType inferenceDtype) {
      this.reference = reference;
      this.trainerDtype = trainerDtype;
      this.inferenceDtype = inferenceDtype;
    }

    @Override
    public void install(long step, Map<String, MemorySegment> buffers) {
      lastStep = step;
      installed.clear();
      mismatches.clear();
      for (Map.Entry<String, MemorySegment> e : buffers.entrySet()) {
        mismatches.addAll(
            reference.mismatches(e.getKey(), e.getValue(), step, trainerDtype, inferenceDtype, 5));
        installed.add(e.getKey());
      }
    }
  }
}
