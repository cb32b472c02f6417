package dev.mx.bench.suite;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.error.MxException;
import dev.mx.api.util.Settings;
import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx bench modelexpress}: without ModelExpress it says how to point mx at one; with one
 * (MX_MODELEXPRESS_SRC and MX_MODELEXPRESS_PYTHON set, as docs/performance/modelexpress.md says) it
 * refits a small Llama on both receivers and checks that they planned the same reads.
 */
class ModelExpressBenchTest {
  private static final BenchOptions OPTIONS =
      new BenchOptions(1, 2, new PrintStream(PrintStream.nullOutputStream()));

  @Test
  void withoutModelExpressItNamesTheVariableToSet() {
    MxException e =
        assertThrows(
            MxException.class,
            () -> new ModelExpressBench(Settings.of(Map.of(), Map.of())).run(OPTIONS));
    assertTrue(e.getMessage().contains("set MX_MODELEXPRESS_SRC"), e.getMessage());
    assertTrue(e.getMessage().contains("MX_MODELEXPRESS_PYTHON"), e.getMessage());
  }

  @Test
  void aFolderWithoutTheClientIsNamed(@TempDir Path dir) {
    MxException e =
        assertThrows(
            MxException.class,
            () ->
                new ModelExpressBench(
                        Settings.of(Map.of(), Map.of("MX_MODELEXPRESS_SRC", dir.toString())))
                    .run(OPTIONS));
    assertTrue(e.getMessage().contains(dir.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("holds no ModelExpress client"), e.getMessage());
  }

  @Test
  void bothReceiversRefitTheSamePlanOfASmallLlama(@TempDir Path dir) throws Exception {
    String client = System.getenv("MX_MODELEXPRESS_SRC");
    assumeTrue(
        client != null && Files.isDirectory(Path.of(client)),
        "MX_MODELEXPRESS_SRC is not set: no ModelExpress checkout to compare against here"
            + " (docs/performance/modelexpress.md)");
    Path config = dir.resolve("small-llama/config.json");
    Files.createDirectories(config.getParent());
    Files.writeString(
        config,
        """
        { "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
          "intermediate_size": 768, "num_attention_heads": 8, "num_key_value_heads": 4,
          "num_hidden_layers": 2, "vocab_size": 1024, "rms_norm_eps": 1e-05,
          "tie_word_embeddings": false, "torch_dtype": "bfloat16" }
        """);
    System.setProperty("mx.bench.modelexpress.model", config.toString());
    System.setProperty("mx.bench.modelexpress.layers", "0");
    List<BenchResult> results;
    try {
      results = new ModelExpressBench().run(OPTIONS);
    } finally {
      System.clearProperty("mx.bench.modelexpress.model");
      System.clearProperty("mx.bench.modelexpress.layers");
    }
    // Per rank of inference tp=2: all, off and the wire; then the two all-rank sums.
    assertEquals(8, results.size(), results.toString());
    for (BenchResult r : results) {
      assertTrue(r.value() > 0 && r.baselineValue() > 0, r.toString());
    }
    assertEquals("mx_verify_all_warm_e2e_s_all_ranks", results.get(6).metric());
  }
}
