package dev.mx.layout.trainer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.metadata.PublishedShard;
import dev.mx.api.metadata.PublishedTensor;
import dev.mx.layout.LayoutException;
import dev.mx.layout.gen.FloatBits;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.vllm.GlobalElement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class TrainerLayoutTest {

  static Stream<Arguments> topologies() {
    List<Arguments> out = new ArrayList<>();
    for (String model :
        List.of(
            "tiny-llama",
            "tiny-mistral",
            "tiny-qwen2",
            "tiny-qwen3",
            "tiny-qwen3-moe",
            "tiny-deepseek")) {
      boolean moe = model.endsWith("moe") || model.equals("tiny-deepseek");
      for (int tp : new int[] {1, 2, 4}) {
        for (int pp : new int[] {1, 2}) {
          for (int ep : moe ? new int[] {1, 2} : new int[] {1}) {
            out.add(Arguments.of(model, new TrainerTopology.Megatron(tp, pp, ep)));
          }
        }
      }
      for (int n : new int[] {1, 2, 3}) {
        out.add(Arguments.of(model, new TrainerTopology.Fsdp(n)));
      }
    }
    out.add(Arguments.of("tiny-qwen3-moe", new TrainerTopology.Megatron(2, 2, 4)));
    out.add(Arguments.of("tiny-qwen3-moe", new TrainerTopology.Megatron(1, 1, 8)));
    out.add(Arguments.of("tiny-deepseek", new TrainerTopology.Megatron(8, 1, 8)));
    out.add(Arguments.of("tiny-deepseek", new TrainerTopology.Megatron(2, 4, 4)));
    out.add(Arguments.of("tiny-llama", new TrainerTopology.Fsdp(7)));
    // Uneven pipeline stages and a separate expert-TP size (Megatron's expert grid).
    out.add(Arguments.of("tiny-deepseek", TrainerTopology.parse("tp=2,pp=3,ep=2,pp-first=2")));
    out.add(Arguments.of("tiny-qwen3-moe", TrainerTopology.parse("pp=2,pp-first=1,pp-last=3")));
    out.add(Arguments.of("tiny-deepseek", TrainerTopology.parse("tp=2,ep=4,etp=1")));
    out.add(Arguments.of("tiny-deepseek", TrainerTopology.parse("tp=4,ep=2,dp=2,etp=1")));
    out.add(Arguments.of("tiny-qwen3-moe", TrainerTopology.parse("tp=4,ep=2,dp=2,etp=2,pp=2")));
    out.add(Arguments.of("tiny-qwen3-moe", TrainerTopology.parse("tp=1,ep=2,dp=4,etp=2")));
    out.add(Arguments.of("tiny-deepseek", TrainerTopology.parse("tp=2,ep=1,etp=4")));
    return out.stream();
  }

  /**
   * Every element of every global tensor is published exactly once across the ranks; nothing else
   * is.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("topologies")
  void publishedAliasesCoverEveryGlobalTensorExactlyOnce(String name, TrainerTopology topology) {
    ModelArchitecture model = ModelConfigs.load(name);
    TrainerLayout layout = topology.layout(model, DType.BF16);
    Map<String, int[]> hits = new HashMap<>();
    for (TrainerRankLayout rank : layout.ranks()) {
      for (AliasShard a : rank.published()) {
        GlobalTensor t =
            model
                .find(a.hfName())
                .orElseThrow(() -> new AssertionError(rank.label() + " publishes unknown " + a));
        assertEquals(t.shape(), a.globalShape(), a.toString());
        int[] h = hits.computeIfAbsent(a.hfName(), k -> new int[Math.toIntExact(t.numel())]);
        forEachFlatIndex(a, i -> h[Math.toIntExact(i)]++);
      }
    }
    assertEquals(
        model.tensors().stream()
            .map(GlobalTensor::name)
            .collect(java.util.stream.Collectors.toSet()),
        hits.keySet(),
        "published names");
    for (var e : hits.entrySet()) {
      for (int i = 0; i < e.getValue().length; i++) {
        if (e.getValue()[i] != 1) {
          fail(
              e.getKey()
                  + "["
                  + i
                  + "] is published "
                  + e.getValue()[i]
                  + " times under "
                  + topology);
        }
      }
    }
  }

  /**
   * Every buffer element holds the generator value of the global element Megatron's own layout puts
   * there.
   */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("contentCases")
  void filledBuffersHoldTheMegatronNativeLayout(
      String name, TrainerTopology.Megatron topology, DType dtype) {
    ModelArchitecture model = ModelConfigs.load(name);
    MegatronLayout layout = new MegatronLayout(model, topology, dtype);
    NativeMegatronLayout expect = new NativeMegatronLayout(model, topology);
    Map<String, Long> keys = new HashMap<>();
    for (TrainerRankLayout rank : layout.ranks()) {
      try (TrainerBuffers buffers = TrainerBuffers.allocate(rank)) {
        buffers.fill(3, 2);
        int tp = rank.rank() % topology.tp();
        int ep = rank.rank() / topology.tp() % topology.ep();
        // Megatron's expert grid regroups a stage's tp·ep·dp ranks as etp × ep × edp.
        int inStage = rank.rank() % topology.stageSize();
        int etp = inStage % topology.etp();
        int eep = inStage / topology.etp() % topology.ep();
        for (LocalBuffer b : rank.buffers()) {
          var seg = buffers.segment(b.name());
          var mapper = expect.mapper(b.name(), b.shape(), tp, ep, etp, eep);
          long n = b.shape().numel();
          for (long i = 0; i < n; i++) {
            GlobalElement src = mapper.apply(i);
            long want =
                src == null
                    ? 0
                    : FloatBits.storedBits(
                        WeightGenerator.valueAt(
                            keys.computeIfAbsent(src.tensor(), t -> WeightGenerator.key(t, 3)),
                            src.flatIndex()),
                        dtype);
            long have = FloatBits.bitsAt(seg, i, dtype);
            if (want != have) {
              fail(
                  rank.label()
                      + " "
                      + b.name()
                      + "["
                      + i
                      + "] = "
                      + Long.toHexString(have)
                      + ", expected "
                      + Long.toHexString(want)
                      + (src == null ? " (padding)" : " from " + src));
            }
          }
        }
      }
    }
  }

  static Stream<Arguments> contentCases() {
    return Stream.of(
        Arguments.of("tiny-llama", new TrainerTopology.Megatron(4, 2, 1), DType.F32),
        Arguments.of("tiny-qwen2", new TrainerTopology.Megatron(2, 1, 1), DType.BF16),
        Arguments.of("tiny-qwen3", new TrainerTopology.Megatron(4, 1, 1), DType.F16),
        Arguments.of("tiny-qwen3-moe", new TrainerTopology.Megatron(2, 2, 2), DType.BF16),
        Arguments.of("tiny-deepseek", new TrainerTopology.Megatron(2, 2, 2), DType.BF16),
        Arguments.of("tiny-deepseek", new TrainerTopology.Megatron(4, 1, 8), DType.F32),
        Arguments.of(
            "tiny-deepseek", new TrainerTopology.Megatron(2, 3, 2, 1, 1, 2, 0), DType.BF16),
        Arguments.of(
            "tiny-qwen3-moe", new TrainerTopology.Megatron(4, 1, 2, 2, 2, 0, 0), DType.F32));
  }

  @Test
  void unevenStagesFollowMegatronsFirstAndLastStageLayers() {
    ModelArchitecture model = ModelConfigs.load("tiny-deepseek"); // 4 layers
    MegatronLayout layout = new MegatronLayout(model, megatron("pp=3,pp-first=2"), DType.BF16);
    assertArrayEquals(new int[] {0, 2}, layout.stageLayers(0));
    assertArrayEquals(new int[] {2, 3}, layout.stageLayers(1));
    assertArrayEquals(new int[] {3, 4}, layout.stageLayers(2));
    Set<String> first = names(layout.rank(0));
    assertTrue(first.contains("embedding.word_embeddings.weight"));
    assertTrue(first.contains("decoder.layers.1.input_layernorm.weight"), first.toString());
    assertFalse(first.contains("decoder.layers.2.input_layernorm.weight"));
    Set<String> last = names(layout.rank(2));
    assertTrue(last.contains("decoder.layers.3.input_layernorm.weight"));
    assertTrue(last.contains("decoder.final_layernorm.weight"));
    assertFalse(last.contains("decoder.layers.2.input_layernorm.weight"));
    MegatronLayout both =
        new MegatronLayout(model, megatron("pp=2,pp-first=1,pp-last=3"), DType.BF16);
    assertArrayEquals(new int[] {1, 4}, both.stageLayers(1));
    assertEquals("tp=1,pp=3,ep=1,pp-first=2", layout.topology().toString());
    assertEquals(layout.topology(), TrainerTopology.parse(layout.topology().toString()));
    // Kimi-K2's 61 layers over 16 stages: 1 + 15 x 4, or 3 + 14 x 4 + 2.
    ModelArchitecture kimi = ModelConfigs.load("kimi-k2");
    MegatronLayout k =
        new MegatronLayout(kimi, megatron("pp=16,ep=8,pp-first=3,pp-last=2"), DType.BF16);
    assertArrayEquals(new int[] {59, 61}, k.stageLayers(15));
    assertArrayEquals(new int[] {3, 7}, k.stageLayers(1));
  }

  @Test
  void unevenStagesThatDoNotSplitNameTheNumbers() {
    ModelArchitecture model = ModelConfigs.load("tiny-deepseek"); // 4 layers
    assertMessage(
        () -> new MegatronLayout(model, megatron("pp=3"), DType.BF16),
        "num_hidden_layers 4 is not divisible by pp 3",
        "pp-first");
    assertMessage(
        () -> new MegatronLayout(model, megatron("pp=3,pp-first=1"), DType.BF16),
        "num_hidden_layers 4 minus pp-first 1 leaves 3 layers",
        "other 2 stages");
    assertMessage(
        () -> new MegatronLayout(model, megatron("pp=2,pp-first=1,pp-last=2"), DType.BF16),
        "leaves 1 layers, which no other stage holds");
    assertMessage(
        () -> new MegatronLayout(model, megatron("pp=3,pp-first=2,pp-last=2"), DType.BF16),
        "leaves 0 layers");
    assertMessage(() -> TrainerTopology.parse("pp-first=2"), "need pp >= 2");
    assertMessage(() -> TrainerTopology.parse("pp=2,pp-last=0"), "pp-last 0 must be >= 1");
  }

  @Test
  void expertTensorParallelRegroupsTheStageForTheExperts() {
    ModelArchitecture model = ModelConfigs.load("tiny-deepseek"); // 8 experts, moe width 32
    // A stage of etp 1 x ep 2 x dp 2 = 4 ranks; the dense weights split over tp 2, twice.
    MegatronLayout layout = new MegatronLayout(model, megatron("tp=2,ep=2,dp=2,etp=1"), DType.BF16);
    assertEquals("tp=2,pp=1,ep=2,dp=2,etp=1", layout.topology().toString());
    assertEquals(4, layout.worldSize());
    // Rank 1: dense TP rank 1 of replica 0; the whole experts 4..7 (expert-parallel rank 1).
    TrainerRankLayout r1 = layout.rank(1);
    assertEquals(
        Shape.of(64, 64), r1.buffer("decoder.layers.1.mlp.experts.linear_fc1.weight0").shape());
    assertTrue(
        r1.published().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.1.mlp.experts.5.down_proj.weight")));
    assertTrue(r1.published().stream().noneMatch(a -> a.hfName().contains(".experts.0.")));
    assertTrue(
        r1.published().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.0.self_attn.o_proj.weight")));
    // Rank 3 holds what rank 1 holds (the experts' second copy, the dense weights' replica 1)
    // and owns none of it.
    TrainerRankLayout r3 = layout.rank(3);
    assertEquals(
        r1.aliases().stream().map(AliasShard::box).toList(),
        r3.aliases().stream().map(AliasShard::box).toList());
    assertTrue(r3.published().isEmpty(), r3.published().toString());
    // Rank 2: dense TP rank 0 of replica 1 (owns nothing dense), experts 0..3 copy 1.
    assertTrue(layout.rank(2).published().isEmpty());
    assertMessage(() -> TrainerTopology.parse("tp=4,ep=2,etp=1"), "tp must divide the 2 ranks");
    assertMessage(
        () -> new MegatronLayout(model, megatron("tp=1,etp=64"), DType.BF16),
        "moe_intermediate_size 32 is not divisible by etp 64");
  }

  /** An open RL recipe's Kimi-K2 trainer: 256 ranks, dense TP 8 over 4 replicas, experts whole. */
  @Test
  void kimiK2AsAnOpenRlRecipeTrainsIt() {
    MegatronLayout layout =
        new MegatronLayout(
            ModelConfigs.load("kimi-k2"), megatron("tp=8,pp=8,ep=32,etp=1,pp-last=5"), DType.BF16);
    assertEquals(256, layout.worldSize());
    assertArrayEquals(new int[] {56, 61}, layout.stageLayers(7));
    assertArrayEquals(new int[] {0, 8}, layout.stageLayers(0));
    TrainerRankLayout r = layout.rank(37); // stage 1, place 5: dense tp 5, experts of ep rank 5
    assertTrue(
        r.published().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.8.mlp.experts.60.down_proj.weight")),
        "12 experts per ep rank: 60..71");
    assertEquals(
        Shape.of(2 * 2048, 7168),
        r.buffer("decoder.layers.8.mlp.experts.linear_fc1.weight0").shape());
  }

  @Test
  void stagesCarryGlobalLayerNumbersAndTheEmbeddingAndHeadOnTheEnds() {
    ModelArchitecture model = ModelConfigs.load("tiny-llama");
    MegatronLayout layout =
        new MegatronLayout(model, new TrainerTopology.Megatron(2, 2, 1), DType.F32);
    TrainerRankLayout first = layout.rank(layout.globalRank(1, 0, 0));
    TrainerRankLayout last = layout.rank(layout.globalRank(1, 1, 0));
    assertEquals("tp1-pp1-ep0", last.label());
    Set<String> firstNames = names(first);
    Set<String> lastNames = names(last);
    assertTrue(firstNames.contains("embedding.word_embeddings.weight"));
    assertTrue(firstNames.contains("decoder.layers.0.self_attention.linear_qkv.weight"));
    assertFalse(firstNames.contains("output_layer.weight"));
    assertTrue(
        lastNames.contains("decoder.layers.1.self_attention.linear_qkv.weight"),
        lastNames.toString());
    assertTrue(
        lastNames.contains("output_layer.weight")
            && lastNames.contains("decoder.final_layernorm.weight"));
    assertTrue(
        last.published().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.1.mlp.up_proj.weight")));
    // vocab 1000 padded to a multiple of 128·2: 1024 rows, 512 per rank; rank 1 publishes rows
    // 512..999 only.
    assertEquals(1024, layout.paddedVocab());
    assertEquals(Shape.of(512, 64), last.buffer("output_layer.weight").shape());
    AliasShard head =
        last.published().stream()
            .filter(a -> a.hfName().equals("lm_head.weight"))
            .findFirst()
            .orElseThrow();
    assertArrayEquals(new long[] {512, 0}, head.shardOffset());
    assertEquals(Shape.of(488, 64), head.shape());
  }

  @Test
  void replicasArePublishedByTpRankZeroAndEpRankZeroOnly() {
    ModelArchitecture model = ModelConfigs.load("tiny-qwen3-moe");
    MegatronLayout layout =
        new MegatronLayout(model, new TrainerTopology.Megatron(2, 1, 2), DType.BF16);
    TrainerRankLayout tp1ep0 = layout.rank(layout.globalRank(1, 0, 0));
    TrainerRankLayout tp0ep1 = layout.rank(layout.globalRank(0, 0, 1));
    assertTrue(
        tp1ep0.aliases().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.1.mlp.gate.weight") && !a.published()));
    assertTrue(tp1ep0.published().stream().noneMatch(a -> a.hfName().endsWith("norm.weight")));
    assertTrue(
        tp0ep1.published().stream().allMatch(a -> a.hfName().contains(".mlp.experts.")),
        "EP rank 1 publishes experts only");
    assertTrue(
        tp0ep1.published().stream()
            .anyMatch(a -> a.hfName().equals("model.layers.3.mlp.experts.4.gate_proj.weight")));
    assertTrue(tp0ep1.published().stream().noneMatch(a -> a.hfName().contains(".experts.3.")));
    assertEquals(
        Shape.of(32, 64),
        tp0ep1.buffer("decoder.layers.1.mlp.experts.linear_fc1.weight0").shape()); // 2·32/tp 2
  }

  @Test
  void fsdpChunksLikeTorchChunk() {
    assertArrayEquals(new long[] {0, 2}, FsdpLayout.chunkRows(5, 4, 0));
    assertArrayEquals(new long[] {4, 5}, FsdpLayout.chunkRows(5, 4, 2));
    assertArrayEquals(
        new long[] {5, 5}, FsdpLayout.chunkRows(5, 4, 3), "the last rank gets no rows");
    ModelArchitecture model = ModelConfigs.load("tiny-qwen3");
    TrainerRankLayout r2 = new FsdpLayout(model, new TrainerTopology.Fsdp(3), DType.F32).rank(2);
    assertEquals(
        Shape.of(332, 64),
        r2.buffer("model.embed_tokens.weight").shape()); // 1000 = 334 + 334 + 332
    assertEquals(
        Shape.of(4), r2.buffer("model.layers.0.self_attn.q_norm.weight").shape()); // 16 = 6 + 6 + 4
  }

  @Test
  void publishedTensorsPointIntoTheBuffers() {
    ModelArchitecture model = ModelConfigs.load("tiny-qwen2");
    TrainerRankLayout rank =
        new MegatronLayout(model, new TrainerTopology.Megatron(4, 1, 1), DType.BF16).rank(1);
    TrainerBuffers buffers = TrainerBuffers.allocate(rank);
    try (buffers) {
      List<PublishedTensor> tables = buffers.publishedTensors("agent-1", 0);
      PublishedTensor k =
          tables.stream()
              .filter(t -> t.name().equals("model.layers.0.self_attn.k_proj.weight"))
              .findFirst()
              .orElseThrow();
      assertEquals("torch.bfloat16", k.dtype());
      assertEquals(2, k.elsize());
      assertEquals(Shape.of(16, 64), k.fullShape());
      // tp rank 1 holds fused rows [24, 48): q rows 24..31 of group 0, then k head 0 (rows 32..39),
      // v head 0.
      PublishedShard s = k.shards().getFirst();
      long base = buffers.segment("decoder.layers.0.self_attention.linear_qkv.weight").address();
      assertEquals(base + 8 * 64 * 2, s.addr());
      assertArrayEquals(new long[] {0, 0}, s.shardOffset());
      assertEquals(Shape.of(8, 64), s.shape());
      assertEquals(null, s.digest());
      // tp rank 1 publishes its replicas of the norms too (tp rank 0 owns them).
      PublishedTensor norm =
          tables.stream()
              .filter(t -> t.name().equals("model.layers.0.input_layernorm.weight"))
              .findFirst()
              .orElseThrow();
      assertArrayEquals(new long[] {0}, norm.shards().getFirst().shardOffset());
      assertTrue(
          rank.published().stream().noneMatch(a -> a.hfName().endsWith("layernorm.weight")),
          "tp rank 0 owns the replicas");
    }
    buffers.close();
    assertThrows(
        IllegalStateException.class,
        () -> buffers.segment("decoder.layers.0.self_attention.linear_qkv.weight"));
  }

  @Test
  void inconsistentTopologiesNameTheKey() {
    ModelArchitecture llama = ModelConfigs.load("tiny-llama");
    ModelArchitecture moe = ModelConfigs.load("tiny-qwen3-moe");
    assertMessage(
        () -> new MegatronLayout(llama, new TrainerTopology.Megatron(1, 3, 1), DType.F32),
        "num_hidden_layers 2",
        "pp 3");
    assertMessage(
        () -> new MegatronLayout(llama, new TrainerTopology.Megatron(5, 1, 1), DType.F32), "tp 5");
    assertMessage(
        () -> new MegatronLayout(llama, new TrainerTopology.Megatron(1, 1, 2), DType.F32),
        "ep 2",
        "mixture-of-experts");
    assertMessage(
        () -> new MegatronLayout(moe, new TrainerTopology.Megatron(1, 1, 3), DType.F32),
        "num_experts 8",
        "ep 3");
    assertMessage(
        () -> new MegatronLayout(moe, new TrainerTopology.Megatron(1, 1, 1), DType.F32).rank(1),
        "rank 1");
  }

  @Test
  void everyTpRankHoldsWholeHeads() {
    // 6 heads of 16 fill 96 fused query rows, which split 4 ways; the heads do not (issue 23).
    ModelArchitecture six = heads(6, 6);
    assertEquals(
        "trainer tp=4,pp=1,ep=1 for six: num_attention_heads 6 is not divisible by tp 4",
        assertThrows(
                LayoutException.class,
                () -> new MegatronLayout(six, new TrainerTopology.Megatron(4, 1, 1), DType.F32))
            .getMessage());
    assertMessage(
        () -> new MegatronLayout(heads(12, 6), new TrainerTopology.Megatron(4, 1, 1), DType.F32),
        "num_key_value_heads 6 and tp 4 must divide one another");
    // Fewer KV heads than tp, or a multiple of tp: valid.
    new MegatronLayout(heads(12, 2), new TrainerTopology.Megatron(4, 1, 1), DType.F32);
    new MegatronLayout(heads(12, 6), new TrainerTopology.Megatron(3, 1, 1), DType.F32);
    new MegatronLayout(six, new TrainerTopology.Megatron(2, 1, 1), DType.F32);
  }

  /** A one-layer model named "six" with these head counts (head_dim 16). */
  private static ModelArchitecture heads(int heads, int kvHeads) {
    return ModelConfigs.parse(
        """
        {"architectures": ["LlamaForCausalLM"], "hidden_size": %d, "num_attention_heads": %d,
         "num_key_value_heads": %d, "num_hidden_layers": 1, "vocab_size": 128,
         "intermediate_size": 96}"""
            .formatted(16 * heads, heads, kvHeads),
        "/m/config.json",
        "six");
  }

  @Test
  void topologiesParse() {
    assertEquals(new TrainerTopology.Megatron(4, 1, 1), TrainerTopology.parse("tp=4"));
    assertEquals(new TrainerTopology.Megatron(2, 2, 2), TrainerTopology.parse("tp=2, pp=2, ep=2"));
    assertEquals(new TrainerTopology.Fsdp(3), TrainerTopology.parse("fsdp=3"));
    assertMessage(() -> TrainerTopology.parse("tp=2,fsdp=2"), "fsdp");
    assertEquals(new TrainerTopology.Megatron(2, 1, 1, 2), TrainerTopology.parse("tp=2,dp=2"));
    assertEquals("tp=2,pp=1,ep=1,dp=2", TrainerTopology.parse("dp=2,tp=2").toString());
    assertEquals("tp=2,pp=1,ep=1", TrainerTopology.parse("tp=2,dp=1").toString());
    assertMessage(() -> TrainerTopology.parse("cp=2"), "'cp'");
    assertMessage(() -> TrainerTopology.parse("tp=x"), "tp", "'x'");
    assertMessage(() -> TrainerTopology.parse("tp=0"), "tp=0");
    assertEquals(
        new TrainerTopology.Megatron(2, 16, 8, 1, 1, 3, 2),
        TrainerTopology.parse("tp=2,pp=16,ep=8,etp=1,pp-first=3,pp-last=2"));
    assertEquals(new TrainerTopology.Megatron(2, 1, 1), TrainerTopology.parse("tp=2,etp=2"));
    assertEquals(256, TrainerTopology.parse("tp=2,ep=128").worldSize());
    assertEquals(32, TrainerTopology.parse("tp=8,ep=32,etp=1").worldSize());
  }

  @Test
  void dataParallelReplicasHoldTheSameBoxesAndRankZeroOwnsThem() {
    ModelArchitecture model = ModelConfigs.load("tiny-qwen3-moe");
    MegatronLayout layout =
        new MegatronLayout(model, new TrainerTopology.Megatron(2, 1, 2, 2), DType.BF16);
    assertEquals(8, layout.worldSize());
    // rank = tp + TP·(ep + EP·(dp + DP·pp)): rank 5 is tp1, ep0, dp1.
    assertEquals(5, layout.globalRank(1, 0, 0, 1));
    TrainerRankLayout owner = layout.rank(1);
    TrainerRankLayout replica = layout.rank(5);
    assertEquals("tp1-pp0-ep0-dp1", replica.label());
    assertEquals(
        owner.aliases().stream().map(AliasShard::box).toList(),
        replica.aliases().stream().map(AliasShard::box).toList());
    assertTrue(replica.published().isEmpty(), "DP rank 1 owns nothing");
    assertEquals(owner.aliases().size(), replica.aliases().size());
  }

  private static TrainerTopology.Megatron megatron(String spec) {
    return (TrainerTopology.Megatron) TrainerTopology.parse(spec);
  }

  private static void assertMessage(Runnable r, String... parts) {
    var e = assertThrows(LayoutException.class, r::run);
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' should mention " + p);
    }
  }

  private static Set<String> names(TrainerRankLayout r) {
    Set<String> s = new HashSet<>();
    r.buffers().forEach(b -> s.add(b.name()));
    return s;
  }

  /**
   * Calls {@code action} with the global row-major flat index of every element of the alias's box.
   */
  static void forEachFlatIndex(AliasShard a, java.util.function.LongConsumer action) {
    long[] g = a.globalShape().rowMajorStrides();
    long[] off = a.shardOffset();
    long[] dims = a.shape().dims();
    long n = a.numel();
    long[] idx = new long[dims.length];
    for (long k = 0; k < n; k++) {
      long flat = 0;
      for (int d = 0; d < dims.length; d++) {
        flat += (off[d] + idx[d]) * g[d];
      }
      action.accept(flat);
      for (int d = dims.length - 1; d >= 0; d--) {
        if (++idx[d] < dims[d]) {
          break;
        }
        idx[d] = 0;
      }
    }
  }
}
