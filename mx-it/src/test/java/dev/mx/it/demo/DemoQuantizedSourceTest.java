package dev.mx.it.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.DType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code mx demo --trainer-dtype FORMAT}: the trainers publish every linear weight quantized, codes
 * and scales, and receivers install both unchanged. Where every split falls on tile boundaries, the
 * installed bytes equal the independent reference of the quantizing install ({@link
 * Fp8DumpReference}: quantizing a slice on its own grid is then quantizing the global tensor), so
 * the dump is checked against it and against a quantizing install's dump byte for byte.
 */
class DemoQuantizedSourceTest {
  /** tiny-qwen3-moe, trainer tp=2 to inference tp=2, fp8-block sources of 16 x 16 blocks. */
  private static final List<String> BLOCK_16_JOB =
      List.of(
          "--model",
          "tiny-qwen3-moe",
          "--trainer",
          "tp=2",
          "--inference",
          "tp=2",
          "--trainer-dtype",
          "fp8-block",
          "--quant-block",
          "16");

  private static String[] with(List<String> job, String... more) {
    List<String> all = new ArrayList<>(job);
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  @ParameterizedTest
  @CsvSource({
    "fp8-block, tiny-qwen3-moe, tp=2, tp=2, 16",
    "fp8-block-ue8m0, tiny-qwen3-moe, tp=2, tp=2, 16",
    "mxfp8, tiny-llama, tp=2, tp=2, 0",
    "fp8-channel, tiny-llama, tp=1, tp=1, 0"
  })
  void quantizedSourcesInstallUnchangedAndEqualTheReference(
      String format, String model, String trainer, String inference, int block, @TempDir Path dir)
      throws Exception {
    List<String> common =
        new ArrayList<>(
            List.of(
                "--in-process", "--model", model, "--trainer", trainer, "--inference", inference));
    if (block > 0) {
      common.addAll(List.of("--quant-block", String.valueOf(block)));
    }
    List<String> source = new ArrayList<>(common);
    source.addAll(
        List.of(
            "--trainer-dtype",
            format,
            "--steps",
            "2",
            "--json",
            "--dump",
            dir.resolve("source").toString()));
    DemoRun r = DemoRun.run(source.toArray(String[]::new));
    assertEquals(0, r.code(), r.toString());
    JsonNode run = r.json().get("run");
    assertTrue(run.get("trainer_dtype").asText().startsWith(format + ":"), run.toString());
    assertEquals(run.get("trainer_dtype").asText(), run.get("inference_dtype").asText());
    int tp = Integer.parseInt(inference.substring(3));
    DType master = model.equals("tiny-llama") ? DType.F32 : DType.BF16;
    Fp8DumpReference.assertQuantizedDump(
        dir.resolve("source"), format, model, tp, 1, master, block > 0 ? block : 128, "vllm", 1);
    for (JsonNode s : r.json().get("steps")) {
      assertEquals(0, s.get("converts").asInt(), "nothing is cast or quantized: " + s);
    }

    List<String> install = new ArrayList<>(common);
    install.addAll(
        List.of(
            "--inference-dtype",
            format,
            "--steps",
            "2",
            "--dump",
            dir.resolve("install").toString()));
    DemoRun q = DemoRun.run(install.toArray(String[]::new));
    assertEquals(0, q.code(), q.toString());
    for (int rank = 0; rank < tp; rank++) {
      String file = "receiver-" + rank + ".safetensors";
      assertArrayEquals(
          Files.readAllBytes(dir.resolve("install").resolve(file)),
          Files.readAllBytes(dir.resolve("source").resolve(file)),
          file + ": the installed sources equal the quantizing install");
    }
  }

  @Test
  void perChannelScalesOfRowParallelWeightsAreWholeOnEveryRank(@TempDir Path dir) throws Exception {
    // Inference tp=2 cuts o_proj and down_proj by columns; each rank installs the publisher's
    // per-row scales of the whole row, which a quantizing install (its own columns) would not.
    DemoRun r =
        DemoRun.run(
            "--in-process",
            "--model",
            "tiny-llama",
            "--trainer",
            "tp=1",
            "--inference",
            "tp=2",
            "--trainer-dtype",
            "fp8-channel",
            "--steps",
            "1",
            "--dump",
            dir.toString());
    assertEquals(0, r.code(), r.toString());
    Fp8DumpReference.assertPerChannelSourceDump(dir, "tiny-llama", 2, DType.F32, 0);
  }

  @Test
  void quantizedSourcesAcrossProcessesInPlace(@TempDir Path dir) throws Exception {
    DemoRun r = DemoRun.run(with(BLOCK_16_JOB, "--steps", "2", "--dump", dir.toString()));
    assertEquals(0, r.code(), r.toString());
    Fp8DumpReference.assertQuantizedDump(
        dir, "fp8-block", "tiny-qwen3-moe", 2, 1, DType.BF16, 16, "vllm", 1);
  }

  @Test
  void aCorruptedScaleIsRefusedAndNothingIsInstalled(@TempDir Path dump) throws Exception {
    DemoRun r =
        DemoRun.run(
            with(
                BLOCK_16_JOB,
                "--in-process",
                "--steps",
                "1",
                "--fault",
                "corrupt",
                "--dump",
                dump.toString()));
    assertEquals(1, r.code(), r.toString());
    assertTrue(r.err().contains("digest mismatch"), r.err());
    assertTrue(r.err().contains("_scale_inv"), "names the scale tensor: " + r.err());
    assertTrue(r.err().contains("no step was installed"), r.err());
  }

  @Test
  void aReceiverExpectingAnotherFormatThanTheTrainersPublishFailsNamingBoth(@TempDir Path dir)
      throws Exception {
    List<String> job =
        List.of(
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=1",
            // tp=1: mxfp8's 1 x 32 tiles would be cut by the experts' 16 columns at tp=2.
            "--inference",
            "tp=1",
            "--metadata",
            "file:" + dir.resolve("store"),
            "--transport",
            "shm",
            "--identity",
            "mx-formats-" + java.util.UUID.randomUUID().toString().substring(0, 8));
    List<Process> all = new ArrayList<>();
    try {
      List<String> trainer =
          DemoRun.steppingPublisher(0, 1, "1", List.of(with(job, "--trainer-dtype", "mxfp8")));
      Process t = DemoRun.mxProcess(dir.resolve("trainer.log"), trainer.toArray(String[]::new));
      all.add(t);
      // The receiver's cap counts from a published version: wait for the trainer to say so.
      java.io.BufferedReader lines =
          new java.io.BufferedReader(
              new java.io.InputStreamReader(t.getInputStream(), StandardCharsets.UTF_8));
      String line;
      do {
        line = lines.readLine();
        assertTrue(
            line != null, "the trainer exited: " + Files.readString(dir.resolve("trainer.log")));
      } while (!line.contains("published step 0"));
      List<String> receiver =
          new ArrayList<>(
              List.of(
                  "receive",
                  "--rank",
                  "0",
                  "--follow",
                  "--steps",
                  "1",
                  "--timeout",
                  "20",
                  "--json"));
      receiver.addAll(List.of(with(job, "--trainer-dtype", "fp8-block", "--quant-block", "16")));
      Process p = DemoRun.mxProcess(dir.resolve("receiver.log"), receiver.toArray(String[]::new));
      all.add(p);
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS), "the receiver finishes");
      String log = Files.readString(dir.resolve("receiver.log"));
      assertEquals(1, p.exitValue(), out + log);
      JsonNode report = new com.fasterxml.jackson.databind.ObjectMapper().readTree(out);
      assertFalse(report.get("ok").asBoolean(), out);
      String error = report.get("error").asText();
      assertTrue(error.contains("is offered without its scales"), error);
      assertTrue(error.contains("_scale' (u8"), error);
      assertTrue(error.contains("the trainers publish another format"), error);
    } finally {
      DemoRun.destroyAll(all);
    }
  }

  @Test
  void badQuantizedSourceOptionsExitTwoNamingTheCause() {
    DemoRun.assertRefused(
        "--trainer-dtype fp8-tensor: fp8-tensor sources are not supported",
        "--trainer-dtype",
        "fp8-tensor");
    DemoRun.assertRefused(
        "--inference-dtype fp8-block: the trainers publish mxfp8 sources; installing them as"
            + " fp8-block would quantize values already quantized",
        "--model",
        "tiny-llama",
        "--trainer-dtype",
        "mxfp8",
        "--inference-dtype",
        "fp8-block");
    DemoRun.assertRefused(
        "--inference-dtype bf16: the trainers publish mxfp8 sources, which receivers install"
            + " unchanged; a dequantizing install is not built",
        "--model",
        "tiny-llama",
        "--trainer-dtype",
        "mxfp8",
        "--inference-dtype",
        "bf16");
    DemoRun.assertRefused(
        "--quant-params '*.o_proj.weight': with --trainer-dtype mxfp8",
        "--model",
        "tiny-llama",
        "--trainer-dtype",
        "mxfp8",
        "--quant-params",
        "*.o_proj.weight");
    // Megatron's linear_qkv holds 8 rows of k per query group: they cut a 16-row block.
    DemoRun.assertRefused(
        "--trainer-dtype fp8-block under --trainer 'tp=2': trainer rank tp0-pp0-ep0 holds [0:8,"
            + " 0:64] of 'model.layers.0.self_attn.k_proj.weight' [16, 64]: its rows [0, 8) of 16"
            + " cut a tile of 16 rows",
        "--model",
        "tiny-llama",
        "--trainer",
        "tp=2",
        "--inference",
        "tp=1",
        "--trainer-dtype",
        "fp8-block",
        "--quant-block",
        "16");
    DemoRun.assertRefused(
        "its scales span every column of a matrix, which this shard cuts",
        "--model",
        "tiny-llama",
        "--trainer",
        "tp=2",
        "--trainer-dtype",
        "fp8-channel");
    DemoRun.assertRefused("--trainer-dtype 'e5m2'", "--trainer-dtype", "e5m2");
  }

  @Test
  void mxPublishAndMxReceiveMoveQuantizedSourcesBetweenProcesses(@TempDir Path dir)
      throws Exception {
    // followingReceiver adds --inference tp=2.
    List<String> job =
        List.of(
            "--model",
            "tiny-qwen3-moe",
            "--trainer",
            "tp=2",
            "--trainer-dtype",
            "fp8-block",
            "--quant-block",
            "16",
            "--metadata",
            "file:" + dir.resolve("store"),
            "--transport",
            "shm",
            "--identity",
            "mx-quantized-" + java.util.UUID.randomUUID().toString().substring(0, 8));
    Path dump = dir.resolve("dump");
    List<Process> all = new ArrayList<>();
    try {
      List<Process> receivers = new ArrayList<>();
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.followingReceiver(r, 2, dump, job);
        receivers.add(
            DemoRun.mxProcess(dir.resolve("receiver-" + r + ".log"), a.toArray(String[]::new)));
      }
      all.addAll(receivers);
      for (int r = 0; r < 2; r++) {
        List<String> a = DemoRun.steppingPublisher(r, 2, "1", job);
        all.add(DemoRun.mxProcess(dir.resolve("trainer-" + r + ".log"), a.toArray(String[]::new)));
      }
      for (int r = 0; r < 2; r++) {
        JsonNode report =
            DemoRun.successfulReport(receivers.get(r), dir.resolve("receiver-" + r + ".log"));
        assertEquals(1, report.get("run").get("last_step").asLong(), report.toString());
      }
      Fp8DumpReference.assertQuantizedDump(
          dump, "fp8-block", "tiny-qwen3-moe", 2, 1, DType.BF16, 16, "vllm", 1);
    } finally {
      DemoRun.destroyAll(all);
    }
  }
}
