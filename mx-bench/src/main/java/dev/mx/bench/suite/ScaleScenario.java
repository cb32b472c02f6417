package dev.mx.bench.suite;

import dev.mx.api.DType;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.api.metadata.PublisherTopology;
import dev.mx.api.metadata.ReplicaShard;
import dev.mx.api.metadata.ShardTable;
import dev.mx.cli.bench.ScaleSpec;
import dev.mx.layout.LayoutException;
import dev.mx.layout.ShardAddressing;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.MegatronLayout;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One simulated deployment of {@code mx bench scale}: a model, a Megatron trainer topology and a
 * vLLM inference topology that both divide it, and the shard tables the trainer ranks would publish
 * (real layouts at made-up addresses: no weight bytes exist).
 */
record ScaleScenario(
    ModelArchitecture model,
    TrainerTopology.Megatron trainer,
    InferenceTopology inference,
    DType dtype) {

  /**
   * The scenario of {@code spec}.
   *
   * @throws IllegalArgumentException naming the topology and the model dimension it does not divide
   */
  static ScaleScenario of(ScaleSpec spec) {
    ModelArchitecture model;
    TrainerTopology trainer;
    InferenceTopology inference;
    try {
      model = ModelConfigs.load(spec.model());
      trainer = TrainerTopology.parse(spec.trainer());
      inference = InferenceTopology.parse(spec.inference());
    } catch (LayoutException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    if (!(trainer instanceof TrainerTopology.Megatron megatron)) {
      throw new IllegalArgumentException(
          "--trainer '" + spec.trainer() + "': the scale bench simulates Megatron (tp, pp, ep)");
    }
    return checked(model, megatron, inference);
  }

  private static ScaleScenario checked(
      ModelArchitecture model, TrainerTopology.Megatron trainer, InferenceTopology inference) {
    try {
      // Both constructors check every dimension (layers, heads, experts, widths) and name it.
      new MegatronLayout(model, trainer, DType.BF16);
      new VllmLayout(model, inference, 0, DType.BF16);
    } catch (LayoutException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    return new ScaleScenario(model, trainer, inference, DType.BF16);
  }

  /**
   * The same deployment with {@code 1/divisor} of the ranks on both sides (the expert-parallel
   * sizes divided), if that still divides the model.
   */
  Optional<ScaleScenario> scaled(int divisor) {
    if (divisor == 1) {
      return Optional.of(this);
    }
    if (trainer.ep() % divisor != 0 || inference.ep() % divisor != 0) {
      return Optional.empty();
    }
    try {
      return Optional.of(
          checked(
              model,
              trainer.withEp(trainer.ep() / divisor),
              new InferenceTopology(inference.tp(), inference.ep() / divisor)));
    } catch (IllegalArgumentException | LayoutException e) {
      return Optional.empty();
    }
  }

  int trainerRanks() {
    return trainer.worldSize();
  }

  int inferenceRanks() {
    return inference.worldSize();
  }

  /** The name versions of this scenario live under, so two rank counts never share one. */
  String storeModel() {
    return "scale-" + model.modelName() + "-" + trainerRanks() + "x" + inferenceRanks();
  }

  String label() {
    return trainerRanks()
        + " -> "
        + inferenceRanks()
        + " (trainer "
        + trainer
        + ", inference "
        + inference
        + ")";
  }

  /**
   * What one trainer rank publishes: the tensors it owns boxes of, and the boxes it holds as
   * replicas of a lower rank's (listed apart, compact, as {@code Publisher} lists them).
   */
  record RankTensors(List<PublishedTensor> owned, List<ReplicaShard> replicas) {
    /** The table's entries: owned tensor entries plus replicas. */
    int entries() {
      return owned.size() + replicas.size();
    }
  }

  /** Every trainer rank's published tensors, in rank order. */
  List<RankTensors> publishedTensors() {
    MegatronLayout layout = new MegatronLayout(model, trainer, dtype);
    ShardAddressing addressing = ShardAddressing.synthetic();
    List<RankTensors> out = new ArrayList<>();
    for (int r = 0; r < trainerRanks(); r++) {
      TrainerRankLayout rank = layout.rank(r);
      String session = addressing.session(rank);
      Map<String, List<PublishedShard>> shards = new LinkedHashMap<>();
      Map<String, AliasShard> first = new LinkedHashMap<>();
      List<ReplicaShard> replicas = new ArrayList<>();
      for (AliasShard a : rank.aliases()) {
        PublishedShard shard =
            new PublishedShard(
                session,
                0,
                addressing.address(rank, a),
                a.shardOffset(),
                a.shape(),
                standInDigest(a.hfName(), a.shardOffset()));
        if (!a.published()) {
          replicas.add(new ReplicaShard(a.hfName(), shard));
          continue;
        }
        first.putIfAbsent(a.hfName(), a);
        shards.computeIfAbsent(a.hfName(), k -> new ArrayList<>()).add(shard);
      }
      List<PublishedTensor> tensors = new ArrayList<>();
      shards.forEach(
          (name, list) ->
              tensors.add(
                  new PublishedTensor(
                      name,
                      dtype.torchLabel(),
                      dtype.elementSize(),
                      first.get(name).globalShape(),
                      list)));
      out.add(new RankTensors(tensors, replicas));
    }
    return out;
  }

  /**
   * The bytes of every box trainer ranks hold as replicas of another rank's (not {@link
   * AliasShard#published() owned}): what tile digests would cover again if replicas listed their
   * own.
   */
  long replicaBytes() {
    MegatronLayout layout = new MegatronLayout(model, trainer, dtype);
    long bytes = 0;
    for (int r = 0; r < trainerRanks(); r++) {
      for (AliasShard a : layout.rank(r).aliases()) {
        if (!a.published()) {
          bytes += a.shape().numel() * dtype.elementSize();
        }
      }
    }
    return bytes;
  }

  /** Trainer rank {@code rank}'s table of {@code step}, as its publisher would build it. */
  ShardTable table(int rank, RankTensors tensors, long step) {
    return new ShardTable(
        "trainer-" + rank,
        "",
        new byte[0],
        tensors.owned(),
        step,
        new PublisherTopology(rank, trainerRanks(), "megatron " + trainer),
        tensors.replicas());
  }

  /**
   * A well-formed 128-bit digest for a shard whose bytes do not exist: the tables have the size and
   * shape of real ones, and nothing reads the bytes. It follows the box, so replicas agree.
   */
  private static String standInDigest(String name, long[] offset) {
    long a = name.hashCode() * 0x9E3779B97F4A7C15L + java.util.Arrays.hashCode(offset);
    long b = Long.rotateLeft(a, 29) * 0xBF58476D1CE4E5B9L;
    return String.format(java.util.Locale.ROOT, "%016x%016x", a, b);
  }
}
