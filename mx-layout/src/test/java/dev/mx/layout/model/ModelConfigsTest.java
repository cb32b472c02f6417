package dev.mx.layout.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.layout.LayoutException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelConfigsTest {

  @Test
  void llama32OneBHasThePublishedParameterCount() {
    ModelArchitecture m = ModelConfigs.load("llama-3.2-1b");
    assertEquals(ArchitectureKind.LLAMA, m.kind());
    assertEquals(1_235_814_400L, m.parameterCount()); // tied: no lm_head
    assertEquals(16 * 9 + 2, m.tensors().size());
    assertEquals(Shape.of(128256, 2048), m.tensor("model.embed_tokens.weight").shape());
    assertEquals(Shape.of(512, 2048), m.tensor("model.layers.15.self_attn.k_proj.weight").shape());
    assertEquals(Shape.of(2048, 8192), m.tensor("model.layers.0.mlp.down_proj.weight").shape());
    assertTrue(m.find("lm_head.weight").isEmpty());
    assertEquals(Optional.of(DType.BF16), m.torchDtype());
  }

  @Test
  void qwen25HalfBHasBiasesAndThePublishedParameterCount() {
    ModelArchitecture m = ModelConfigs.load("Qwen/Qwen2.5-0.5B");
    assertEquals(494_032_768L, m.parameterCount());
    assertEquals(Shape.of(128), m.tensor("model.layers.3.self_attn.k_proj.bias").shape());
    assertEquals(64, m.headDim());
  }

  @Test
  void qwen3HasPerHeadNormsAndHeadDimIndependentOfHidden() {
    ModelArchitecture m = ModelConfigs.load("qwen3-0.6b");
    assertEquals(596_049_920L, m.parameterCount());
    assertEquals(
        440_466_432L, m.parameterCount() - 151936L * 1024 - 1024, "0.44B non-embedding parameters");
    assertEquals(Shape.of(2048, 1024), m.tensor("model.layers.0.self_attn.q_proj.weight").shape());
    assertEquals(Shape.of(1024, 2048), m.tensor("model.layers.0.self_attn.o_proj.weight").shape());
    assertEquals(Shape.of(128), m.tensor("model.layers.27.self_attn.k_norm.weight").shape());
    assertTrue(m.find("model.layers.0.self_attn.q_proj.bias").isEmpty());
  }

  @Test
  void qwen3MoeHasRouterAndExpertsAndThePublishedParameterCount() {
    ModelArchitecture m = ModelConfigs.load("qwen3-30b-a3b");
    assertEquals(30_532_122_624L, m.parameterCount());
    assertEquals(Shape.of(128, 2048), m.tensor("model.layers.47.mlp.gate.weight").shape());
    assertEquals(
        Shape.of(768, 2048), m.tensor("model.layers.0.mlp.experts.127.up_proj.weight").shape());
    assertEquals(
        Shape.of(2048, 768), m.tensor("model.layers.0.mlp.experts.0.down_proj.weight").shape());
    assertTrue(m.find("model.layers.0.mlp.gate_proj.weight").isEmpty());
    assertEquals(Shape.of(151936, 2048), m.tensor("lm_head.weight").shape());
  }

  @Test
  void deepSeekV3HasLatentAttentionSharedExpertsAndThePublishedParameterCount() {
    ModelArchitecture m = ModelConfigs.load("deepseek-v3");
    // DeepSeek's "671B" main-model parameters (the multi-token-prediction layer is not modelled).
    assertEquals(671_026_419_200L, m.parameterCount());
    assertFalse(m.isMoeLayer(2));
    assertTrue(m.isMoeLayer(3) && m.isMoeLayer(60));
    assertEquals(Shape.of(18432, 7168), m.tensor("model.layers.2.mlp.gate_proj.weight").shape());
    assertEquals(
        Shape.of(1536, 7168), m.tensor("model.layers.0.self_attn.q_a_proj.weight").shape());
    assertEquals(
        Shape.of(128 * 192, 1536), m.tensor("model.layers.0.self_attn.q_b_proj.weight").shape());
    assertEquals(
        Shape.of(576, 7168),
        m.tensor("model.layers.0.self_attn.kv_a_proj_with_mqa.weight").shape());
    assertEquals(
        Shape.of(128 * 256, 512), m.tensor("model.layers.0.self_attn.kv_b_proj.weight").shape());
    assertEquals(
        Shape.of(7168, 128 * 128), m.tensor("model.layers.0.self_attn.o_proj.weight").shape());
    assertEquals(
        Shape.of(256), m.tensor("model.layers.3.mlp.gate.e_score_correction_bias").shape());
    assertEquals(
        Shape.of(2048, 7168),
        m.tensor("model.layers.3.mlp.shared_experts.gate_proj.weight").shape());
    assertTrue(m.find("model.layers.3.mlp.experts.255.down_proj.weight").isPresent());
    assertTrue(m.find("model.layers.0.self_attn.q_proj.weight").isEmpty());
  }

  @Test
  void kimiK2IsTheDeepSeekArchitectureWith384ExpertsAndOneDenseLayer() {
    ModelArchitecture m = ModelConfigs.load("kimi-k2");
    assertEquals(ArchitectureKind.DEEPSEEK_V3, m.kind());
    // Moonshot's "1T total parameters" (1.03 T as its Hugging Face card counts them).
    assertEquals(1_026_408_232_448L, m.parameterCount());
    assertFalse(m.isMoeLayer(0));
    assertTrue(m.isMoeLayer(1));
    assertEquals(384, m.numExperts());
    assertEquals(1, m.sharedExperts());
    assertEquals(
        Shape.of(64 * 192, 1536), m.tensor("model.layers.5.self_attn.q_b_proj.weight").shape());
    assertEquals(Shape.of(163840, 7168), m.tensor("lm_head.weight").shape());
    assertTrue(m.find("model.layers.60.mlp.experts.383.up_proj.weight").isPresent());
  }

  @Test
  void tinyMoeHonoursMlpOnlyLayersAndSparseStep() {
    ModelArchitecture m = ModelConfigs.load("tiny-qwen3-moe");
    assertFalse(m.isMoeLayer(0));
    assertTrue(m.isMoeLayer(1) && m.isMoeLayer(3));
    assertTrue(m.find("model.layers.0.mlp.gate_proj.weight").isPresent());
    assertTrue(m.find("model.layers.1.mlp.experts.7.gate_proj.weight").isPresent());
    String json =
        """
        {"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
         "num_hidden_layers": 4, "vocab_size": 100, "intermediate_size": 32, "num_experts": 4,
         "moe_intermediate_size": 8, "decoder_sparse_step": 2}""";
    ModelArchitecture s = ModelConfigs.parse(json, "inline", "step2");
    assertFalse(s.isMoeLayer(0));
    assertTrue(s.isMoeLayer(1));
    assertFalse(s.isMoeLayer(2));
    assertTrue(s.isMoeLayer(3));
    assertEquals(4, s.numKeyValueHeads(), "num_key_value_heads defaults to num_attention_heads");
  }

  @Test
  void everyBundledConfigLoads() {
    for (String name : ModelConfigs.BUNDLED) {
      ModelArchitecture m = ModelConfigs.load(name);
      assertEquals(name, m.modelName());
      assertTrue(m.parameterCount() > 0, name);
    }
    assertTrue(ModelConfigs.load("tiny-mistral").tieWordEmbeddings());
    assertEquals(16, ModelConfigs.load("tiny-mistral").headDim());
  }

  @Test
  void loadsFromAFileOrADirectory(@TempDir Path dir) throws IOException {
    Path model = Files.createDirectories(dir.resolve("my-model"));
    Files.writeString(
        model.resolve("config.json"),
        """
        {"architectures": ["MistralForCausalLM"], "hidden_size": 32, "num_attention_heads": 4,
         "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 50, "intermediate_size": 16}""");
    ModelArchitecture fromDir = ModelConfigs.load(model.toString());
    ModelArchitecture fromFile = ModelConfigs.load(model.resolve("config.json").toString());
    assertEquals("my-model", fromDir.modelName());
    assertEquals(fromDir.tensors(), fromFile.tensors());
    assertEquals(Shape.of(8, 32), fromDir.tensor("model.layers.0.self_attn.v_proj.weight").shape());
  }

  private static LayoutException parseError(String json) {
    return assertThrows(
        LayoutException.class, () -> ModelConfigs.parse(json, "/models/x/config.json", "x"));
  }

  private static void assertNames(LayoutException e, String... parts) {
    for (String p : parts) {
      assertTrue(e.getMessage().contains(p), "'" + e.getMessage() + "' should name " + p);
    }
  }

  private static final String BASE =
      """
      "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
      "vocab_size": 100, "intermediate_size": 32""";

  @Test
  void errorsNameTheKeyAndTheFile() {
    assertNames(
        parseError("{\"architectures\": [\"GPT2LMHeadModel\"], " + BASE + "}"),
        "'architectures'",
        "GPT2LMHeadModel",
        "/models/x/config.json",
        "LlamaForCausalLM");
    assertNames(parseError("{" + BASE + "}"), "'architectures'", "missing");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], \"num_attention_heads\": 4, "
                + "\"num_hidden_layers\": 2, \"vocab_size\": 100, \"intermediate_size\": 32}"),
        "'hidden_size'",
        "missing",
        "/models/x/config.json");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], "
                + BASE.replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")
                + "}"),
        "'num_key_value_heads'",
        "not divisible");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], "
                + BASE.replace("\"num_attention_heads\": 4", "\"num_attention_heads\": 6")
                    .replace("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3")
                + "}"),
        "'num_attention_heads'",
        "hidden_size 64",
        "head_dim");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], "
                + BASE.replace("\"vocab_size\": 100", "\"vocab_size\": \"big\"")
                + "}"),
        "'vocab_size'",
        "integer");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], "
                + BASE.replace("\"vocab_size\": 100", "\"vocab_size\": 0")
                + "}"),
        "'vocab_size'",
        "positive");
    assertNames(
        parseError("{\"architectures\": [\"LlamaForCausalLM\"], \"mlp_bias\": true, " + BASE + "}"),
        "'mlp_bias'");
    assertNames(
        parseError("{\"architectures\": [\"Qwen3MoeForCausalLM\"], " + BASE + "}"),
        "'num_experts'",
        "missing");
    assertNames(
        parseError(
            "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"num_experts\": 4, "
                + "\"moe_intermediate_size\": 8, \"mlp_only_layers\": [5], "
                + BASE
                + "}"),
        "'mlp_only_layers'",
        "5");
    assertNames(
        parseError(
            "{\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"complex32\", "
                + BASE
                + "}"),
        "'torch_dtype'",
        "complex32");
    assertNames(parseError("{not json"), "/models/x/config.json", "JSON");
    assertNames(parseError("[1, 2]"), "/models/x/config.json", "object");
  }

  @Test
  void unknownModelNamesListTheBundledOnes() {
    var e = assertThrows(LayoutException.class, () -> ModelConfigs.load("llama-9000"));
    assertTrue(
        e.getMessage().contains("llama-9000") && e.getMessage().contains("qwen3-30b-a3b"),
        e.getMessage());
  }
}
