package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.DType;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mx demo --inference-dtype fp8-block | e4m3fn | e5m2} in process: the dumps equal an
 * independent reference computed from the generator and the rule of issue 24 ({@link
 * Fp8DumpReference}), and {@code --json} reports the quantization error the reference finds.
 */
class DemoFp8Test {

  @Test
  void denseModelBlockQuantizedWithPartialBlocksReportsTheReferenceError(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=2,pp=2",
            "--inference",
            "tp=2",
            "--trainer-dtype",
            "bf16",
            "--inference-dtype",
            "fp8-block",
            "--fp8-partial-blocks",
            "--quant-block",
            "32",
            "--steps",
            "2",
            "--json",
            "--dump",
            dump.toString());
    assertEquals(0, r.code(), r.toString());
    JsonNode doc = r.json();
    assertEquals(
        "fp8-block:32:vllm:partial-blocks", doc.get("run").get("inference_dtype").asText());
    float[][] want =
        Fp8DumpReference.assertBlockQuantizedDump(
            dump, "tiny-llama", 2, 1, DType.BF16, 32, "vllm", 1);
    int checked = 0;
    for (JsonNode s : doc.get("steps")) {
      if (s.get("step").asLong() != 1) {
        continue;
      }
      int rank = s.get("rank").asInt();
      assertEquals(want[rank][0], (float) s.get("quant_max_abs_err").asDouble(), s.toString());
      assertEquals(want[rank][1], (float) s.get("quant_max_rel_err").asDouble(), s.toString());
      assertTrue(want[rank][0] > 0 && want[rank][1] > 0, "a lossy cast shows an error");
      checked++;
    }
    assertEquals(2, checked, "one step-1 entry per receiver rank");
  }

  @Test
  void moeModelWithExpertParallelismQuantizesEveryExpertAtTheDefaultBlock(@TempDir Path dump)
      throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=2,ep=2",
            "--inference",
            "tp=2,ep=2",
            "--inference-dtype",
            "fp8-block",
            "--fp8-partial-blocks",
            "--fp8-rounding",
            "deepgemm",
            "--steps",
            "2",
            "--dump",
            dump.toString());
    assertEquals(0, r.code(), r.toString());
    // tiny-qwen3-moe publishes bf16 (its torch_dtype); every matrix is one partial 128 block.
    Fp8DumpReference.assertBlockQuantizedDump(
        dump, "tiny-qwen3-moe", 2, 2, DType.BF16, 128, "deepgemm", 1);
  }

  @Test
  void moeModelUnderTensorParallelExpertsWithBlock16(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=2",
            "--inference",
            "tp=2",
            "--trainer-dtype",
            "f32",
            "--inference-dtype",
            "fp8-block",
            "--fp8-partial-blocks",
            "--quant-block",
            "16",
            "--fp8-rounding",
            "exact",
            "--steps",
            "1",
            "--dump",
            dump.toString());
    assertEquals(0, r.code(), r.toString());
    Fp8DumpReference.assertBlockQuantizedDump(
        dump, "tiny-qwen3-moe", 2, 1, DType.F32, 16, "exact", 0);
  }

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({
    "fp8-block-ue8m0, tiny-qwen3-moe, 2, true",
    "mxfp8, tiny-qwen3-moe, 2, false",
    "fp8-tensor, tiny-qwen3-moe, 2, false",
    "fp8-channel, tiny-llama, 1, false"
  })
  void eachFormatDumpsItsCodesAndTheEnginesScaleTensors(
      String format, String model, int ep, boolean blockFormat, @TempDir Path dump)
      throws Exception {
    java.util.List<String> args =
        new java.util.ArrayList<>(
            java.util.List.of(
                "--in-process",
                "--model",
                model,
                "--trainer",
                "tp=2",
                "--inference",
                "tp=2,ep=" + ep,
                "--inference-dtype",
                format,
                "--steps",
                "1",
                "--dump",
                dump.toString()));
    if (blockFormat) {
      args.addAll(java.util.List.of("--quant-block", "16", "--fp8-partial-blocks"));
    }
    DemoRun r = DemoRun.run(args.toArray(String[]::new));
    assertEquals(0, r.code(), r.toString());
    DType trainer = model.equals("tiny-llama") ? DType.F32 : DType.BF16;
    Fp8DumpReference.assertQuantizedDump(
        dump, format, model, 2, ep, trainer, blockFormat ? 16 : 128, "vllm", 0);
  }

  @Test
  void plainElementCastsToE4m3fnAndE5m2(@TempDir Path dump) throws Exception {
    for (String[] c : new String[][] {{"e4m3fn", "e4m3"}, {"e5m2", "e5m2"}}) {
      Path dir = dump.resolve(c[0]);
      DemoRun r =
          DemoRun.run(
              "--in-process",
              "--model",
              "tiny-llama",
              "--trainer",
              "tp=2",
              "--inference",
              "tp=2",
              "--inference-dtype",
              c[0],
              "--steps",
              "1",
              "--dump",
              dir.toString());
      assertEquals(0, r.code(), r.toString());
      Fp8DumpReference.assertElementCastDump(
          dir, "tiny-llama", 2, 1, DType.F32, DType.parse(c[1]), 0);
    }
  }

  @Test
  void badFp8OptionsExitTwoNamingOptionAndValue() {
    DemoRun.assertRefused(
        "--quant-block 0", "--inference-dtype", "fp8-block", "--quant-block", "0");
    DemoRun.assertRefused(
        "--quant-block -128", "--inference-dtype", "fp8-block", "--quant-block", "-128");
    DemoRun.assertRefused(
        "--quant-block 96", "--inference-dtype", "fp8-block", "--quant-block", "96");
    DemoRun.assertRefused(
        "--quant-block '64': needs --inference-dtype fp8-block", "--quant-block", "64");
    DemoRun.assertRefused(
        "--fp8-rounding 'vllm': needs --inference-dtype fp8-block", "--fp8-rounding", "vllm");
    DemoRun.assertRefused(
        "--fp8-partial-blocks 'true': needs --inference-dtype fp8-block", "--fp8-partial-blocks");
    // vLLM's alignment rule: tiny-llama's 32 q rows per rank are not a multiple of 128.
    DemoRun.assertRefused(
        "'model.layers.0.self_attn.qkv_proj.weight': its member"
            + " 'model.layers.0.self_attn.q_proj.weight' has an output partition of 32 rows, not a"
            + " multiple of the block 128",
        "--model",
        "tiny-llama",
        "--inference-dtype",
        "fp8-block");
    DemoRun.assertRefused(
        "--fp8-rounding 'nearest': unknown fp8 rounding 'nearest'",
        "--inference-dtype",
        "fp8-block",
        "--fp8-rounding",
        "nearest");
    DemoRun.assertRefused(
        "'*.w13_weight' names no parameter",
        "--model",
        "tiny-llama",
        "--inference-dtype",
        "fp8-block",
        "--quant-params",
        "*.o_proj.weight,*.w13_weight");
    DemoRun.assertRefused(
        "'model.norm.weight' of shape [64]",
        "--model",
        "tiny-llama",
        "--inference-dtype",
        "fp8-block",
        "--quant-params",
        "model.norm.weight");
    DemoRun.assertRefused("--inference-dtype 'fp4'", "--inference-dtype", "fp4");
    DemoRun.assertRefused(
        "--quant-block '64': needs a block format (--inference-dtype fp8-block or fp8-block-ue8m0),"
            + " not mxfp8",
        "--inference-dtype",
        "mxfp8",
        "--quant-block",
        "64");
    DemoRun.assertRefused("--trainer-dtype 'e4m3fn'", "--trainer-dtype", "e4m3fn");
    DemoRun.assertRefused("--device 'cuda'", "--inference-dtype", "fp8-block", "--device", "cuda");
  }

  @Test
  void mxReceiveChecksTheSameOptions(@TempDir Path store) {
    DemoRun r =
        DemoRun.command(
            "receive",
            "--metadata",
            "file:" + store,
            "--rank",
            "0",
            "--inference-dtype",
            "fp8-block",
            "--quant-block",
            "8");
    assertEquals(2, r.code(), r.toString());
    assertTrue(r.err().contains("--quant-block 8"), r.err());
  }
}
