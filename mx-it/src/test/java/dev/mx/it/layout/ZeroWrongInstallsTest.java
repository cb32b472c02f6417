package dev.mx.it.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.error.DigestMismatchException;
import dev.mx.api.error.IncompleteRefitException;
import dev.mx.api.error.MxException;
import dev.mx.api.error.UnverifiableShardException;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
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
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Issue 12's wrong-install cases in the default verification mode, over real trainer memory and the
 * mem transport: each faulty step fails closed naming the cause and installs nothing; the next
 * correct step installs weights equal to the reference element by element.
 */
@SuppressWarnings("unchecked")
class ZeroWrongInstallsTest {
  private static final String Q0 = "model.layers.0.self_attn.q_proj.weight";
  private static final String K0 = "model.layers.0.self_attn.k_proj.weight";

  /**
   * One receiver rank over a trainer cluster; {@code fault} rewrites the sources of step 0 only.
   */
  private static void faultyStepThenCorrect(
      TrainerTopology trainer,
      InferenceTopology inference,
      int rank,
      UnaryOperator<Map<String, SourceInfo>> fault,
      java.util.function.Consumer<TrainerCluster> corrupt,
      Class<? extends MxException> expected,
      String... messageParts) {
    ModelArchitecture model = ModelConfigs.load("tiny-llama");
    CpuDigestProvider digests = new CpuDigestProvider();
    try (TrainerCluster trainers = new TrainerCluster(trainer.layout(model, DType.BF16));
        Transport t = new MemTransportProvider().create(TransportConfig.of("receiver-" + rank))) {
      long[] step = {0};
      Map<String, SourceInfo>[] published = new Map[1];
      LayoutRefitEndToEndTest.CheckingInstaller installer =
          new LayoutRefitEndToEndTest.CheckingInstaller(
              new VllmReference(model, inference, rank), DType.BF16, DType.BF16);
      try (Receiver r =
          Receiver.builder()
              .config(ReceiverConfig.defaults().withRank(rank).withThreads(2))
              .transport(t)
              .discovery(
                  timeout -> {
                    // Step 0: the tables as published before any corruption, rewritten by the
                    // fault.
                    Map<String, SourceInfo> s =
                        step[0] == 0 ? fault.apply(published[0]) : trainers.sources(digests);
                    return new DiscoveredSources(s, trainers.peerMetadata(), step[0]);
                  })
              .geometry(new VllmLayout(model, inference, rank, DType.BF16))
              .installer(installer)
              .digests(digests)
              .build()) {
        trainers.fill(0);
        published[0] = trainers.sources(digests);
        corrupt.accept(trainers);
        MxException e = assertThrows(expected, () -> r.updateWeights(0));
        for (String part : messageParts) {
          assertTrue(e.getMessage().contains(part), "'" + part + "' in: " + e.getMessage());
        }
        assertEquals(-1, installer.lastStep, "nothing installed");
        step[0] = 1;
        trainers.fill(1);
        r.invalidate();
        Map<String, Object> m = r.updateWeights(1);
        assertEquals(1, installer.lastStep, "the next correct step installs");
        assertEquals(List.of(), installer.mismatches);
        assertEquals(0L, m.get("unverified_bytes"), m.toString());
      }
    }
  }

  private static final TrainerTopology TP4 = new TrainerTopology.Megatron(4, 1, 1);
  private static final InferenceTopology TP2 = InferenceTopology.tp(2);

  private static Map<String, SourceInfo> edit(
      Map<String, SourceInfo> s, String name, UnaryOperator<List<Shard>> shards) {
    Map<String, SourceInfo> out = new LinkedHashMap<>(s);
    SourceInfo i = out.get(name);
    out.put(
        name,
        new SourceInfo(i.globalShape(), i.dtype(), shards.apply(new ArrayList<>(i.shards()))));
    return out;
  }

  @Test
  void aMissingShardFailsNamingTheSourceAndTheHole() {
    faultyStepThenCorrect(
        TP4,
        TP2,
        0,
        s ->
            edit(
                s,
                Q0,
                l -> {
                  l.remove(1);
                  return l;
                }),
        c -> {},
        IncompleteRefitException.class,
        "source '" + Q0 + "'",
        "no shard holds");
  }

  @Test
  void aMissingTensorEntryFailsNamingTheParameterNeverWritten() {
    faultyStepThenCorrect(
        TP4,
        TP2,
        0,
        s -> {
          Map<String, SourceInfo> out = new LinkedHashMap<>(s);
          out.remove("model.layers.1.input_layernorm.weight");
          return out;
        },
        c -> {},
        IncompleteRefitException.class,
        "param model.layers.1.input_layernorm.weight",
        "never written");
  }

  @Test
  void aWrongAddressWithoutDigestFailsTheDefaultMode() {
    faultyStepThenCorrect(
        TP4,
        TP2,
        0,
        s -> {
          Shard k = s.get(K0).shards().get(0);
          return edit(
              s,
              Q0,
              l -> {
                Shard q = l.get(0);
                // q's first shard now "lives" at k's address, and the table carries no digest for
                // it.
                l.set(
                    0,
                    new Shard(q.shardOffset(), q.shape(), k.session(), k.addr(), q.elsize(), null));
                return l;
              });
        },
        c -> {},
        UnverifiableShardException.class,
        Q0,
        "did not publish a verification digest",
        "--verify whole-shards");
  }

  @Test
  void aWrongAddressWithADigestIsAMismatch() {
    faultyStepThenCorrect(
        TP4,
        TP2,
        0,
        s -> {
          // Another tensor's shard of the same size, so the read itself is in bounds.
          Shard k = s.get("model.layers.1.self_attn.q_proj.weight").shards().get(0);
          return edit(
              s,
              Q0,
              l -> {
                Shard q = l.get(0);
                l.set(
                    0,
                    new Shard(
                        q.shardOffset(), q.shape(), k.session(), k.addr(), q.elsize(), q.digest()));
                return l;
              });
        },
        c -> {},
        DigestMismatchException.class,
        "source '" + Q0 + "'");
  }

  @Test
  void aTableWithoutDigestsFailsWithTheOptOut() {
    faultyStepThenCorrect(
        TP4,
        TP2,
        1,
        s -> {
          Map<String, SourceInfo> out = new LinkedHashMap<>();
          s.forEach(
              (n, i) ->
                  out.put(
                      n,
                      new SourceInfo(
                          i.globalShape(),
                          i.dtype(),
                          i.shards().stream().map(x -> x.withDigest(null)).toList())));
          return out;
        },
        c -> {},
        UnverifiableShardException.class,
        "did not publish a verification digest",
        "--verify off");
  }

  @Test
  void aCorruptByteUnderInferenceTpAboveTrainerTpFailsNamingTheStagedShard() {
    // Trainer TP 2 -> inference TP 4: no receiver reads a trainer shard whole, so the shard is
    // staged whole,
    // verified, and only then copied; the corrupted byte is caught before anything is installed.
    TrainerTopology tp2 = new TrainerTopology.Megatron(2, 1, 1);
    faultyStepThenCorrect(
        tp2,
        InferenceTopology.tp(4),
        1,
        s -> s,
        c -> {
          Shard victim = c.sources(new CpuDigestProvider()).get(Q0).shards().get(0);
          MemorySegment bytes = c.bytesOf(victim);
          bytes.set(ValueLayout.JAVA_BYTE, 3, (byte) (bytes.get(ValueLayout.JAVA_BYTE, 3) ^ 0x40));
        },
        DigestMismatchException.class,
        "staged weight digest mismatch for source '" + Q0 + "'",
        "trainer-0");
  }
}
