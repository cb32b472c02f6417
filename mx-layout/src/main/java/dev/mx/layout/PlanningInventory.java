package dev.mx.layout;

import dev.mx.api.DType;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.api.refit.Capture;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.AliasShard;
import dev.mx.layout.trainer.TrainerLayout;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Everything a planner needs for one receiver rank: its capture (copies and parameter layout) and
 * the sources every trainer rank publishes. {@link #qwen3MoeEp8ToTp8(int)} is the real
 * Qwen3-30B-A3B inventory of the planner benchmark (P4).
 */
public record PlanningInventory(Capture capture, Map<String, SourceInfo> sources) {

  /**
   * The sources every trainer rank publishes, merged per Hugging Face name (rank order, then alias
   * order), at the addresses {@code addressing} gives.
   */
  public static Map<String, SourceInfo> sources(
      List<TrainerRankLayout> ranks, ShardAddressing addressing) {
    Map<String, List<Shard>> shards = new LinkedHashMap<>();
    Map<String, AliasShard> first = new LinkedHashMap<>();
    DType dtype = null;
    for (TrainerRankLayout r : ranks) {
      dtype = r.dtype();
      String session = addressing.session(r);
      int elsize = r.dtype().elementSize();
      for (AliasShard a : r.published()) {
        first.putIfAbsent(a.hfName(), a);
        shards
            .computeIfAbsent(a.hfName(), k -> new ArrayList<>())
            .add(
                new Shard(
                    a.shardOffset(), a.shape(), session, addressing.address(r, a), elsize, null));
      }
    }
    Map<String, SourceInfo> out = new LinkedHashMap<>();
    for (Map.Entry<String, List<Shard>> e : shards.entrySet()) {
      out.put(e.getKey(), new SourceInfo(first.get(e.getKey()).globalShape(), dtype, e.getValue()));
    }
    return out;
  }

  /**
   * Receiver {@code receiver}'s capture of the full manifest against every trainer rank at
   * synthetic addresses.
   */
  public static PlanningInventory build(TrainerLayout trainer, VllmLayout receiver) {
    Map<String, SourceInfo> sources = sources(trainer.ranks(), ShardAddressing.synthetic());
    Capture capture = receiver.capture(VllmLayout.manifest(trainer.model(), trainer.dtype()));
    return new PlanningInventory(capture, sources);
  }

  /**
   * The inventory for a bundled or on-disk model, trainer and inference topology, both in {@code
   * dtype}.
   */
  public static PlanningInventory build(
      String model,
      TrainerTopology trainer,
      InferenceTopology inference,
      int receiverRank,
      DType dtype) {
    ModelArchitecture arch = ModelConfigs.load(model);
    return build(trainer.layout(arch, dtype), new VllmLayout(arch, inference, receiverRank, dtype));
  }

  /**
   * P4: Qwen3-30B-A3B (48 layers, 128 experts), trainer Megatron EP=8 (TP=1, PP=1) → vLLM TP=8
   * (ep=1, experts sliced by intermediate), bf16 on both sides, for one receiver rank.
   */
  public static PlanningInventory qwen3MoeEp8ToTp8(int receiverRank) {
    return build(
        "qwen3-30b-a3b",
        new TrainerTopology.Megatron(1, 1, 8),
        InferenceTopology.tp(8),
        receiverRank,
        DType.BF16);
  }

  public int copyCount() {
    return capture.result().copies().size();
  }

  public long shardCount() {
    long n = 0;
    for (SourceInfo s : sources.values()) {
      n += s.shards().size();
    }
    return n;
  }
}
