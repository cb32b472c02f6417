package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.mx.api.transport.TransportProvider;
import dev.mx.cli.demo.OptionChecks;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 23: a model whose heads do not split across a topology, and a metadata store the ranks
 * cannot share, are usage errors (exit 2, one line naming the option) found before any worker
 * starts; the valid cases next to them stay valid.
 */
class ModelAndStoreOptionChecksTest {

  @TempDir Path dir;

  /**
   * An HF-style config.json with these head counts (head_dim 16), in a folder named {@code name}.
   */
  private String model(String name, int heads, int kvHeads) throws IOException {
    Path folder = Files.createDirectories(dir.resolve(name));
    Files.writeString(
        folder.resolve("config.json"),
        """
        {"architectures": ["LlamaForCausalLM"], "hidden_size": %d, "num_attention_heads": %d,
         "num_key_value_heads": %d, "num_hidden_layers": 1, "vocab_size": 128,
         "intermediate_size": 192, "torch_dtype": "float32"}"""
            .formatted(16 * heads, heads, kvHeads));
    return folder.toString();
  }

  private static void usageError(String expected, String... args) {
    CliProcess.Run r = CliProcess.inProcess(args);
    assertEquals(2, r.code(), String.join(" ", args) + ": " + r.err());
    List<String> lines = r.err().lines().toList();
    assertEquals(1, lines.size(), "one line, got:\n" + r.err());
    assertTrue(lines.get(0).contains(expected), lines.get(0));
    assertEquals("", r.out());
  }

  /** Runs the option checks alone: no worker, no store, no model allocation. */
  private static void accepted(String... args) {
    CommandLine root = new CommandLine(new Main());
    CommandLine.ParseResult parsed = root.parseArgs(args);
    assertDoesNotThrow(
        () -> OptionChecks.check(parsed.asCommandLineList().getLast()), String.join(" ", args));
  }

  @Test
  void unevenStagesAndExpertTpAreCheckedAgainstTheModel() {
    usageError(
        "num_hidden_layers 4 minus pp-first 1 leaves 3 layers, which do not split evenly",
        "demo",
        "--model",
        "tiny-deepseek",
        "--trainer",
        "pp=3,pp-first=1",
        "--inference",
        "tp=1");
    usageError(
        "--trainer 'tp=4,ep=2,etp=1': trainer topology tp=4,pp=1,ep=2,dp=1,etp=1: tp must divide the 2"
            + " ranks of a stage",
        "demo",
        "--model",
        "tiny-deepseek",
        "--trainer",
        "tp=4,ep=2,etp=1");
    usageError(
        "fsdp=N cannot be combined with tp, pp, ep, dp, etp, pp-first or pp-last",
        "demo",
        "--trainer",
        "fsdp=2,pp-last=1");
    usageError("pp-first must be at least 1", "demo", "--trainer", "pp=2,pp-first=0");
    accepted(
        "demo",
        "--model",
        "tiny-deepseek",
        "--trainer",
        "tp=2,pp=3,ep=2,dp=2,pp-first=2,etp=1",
        "--inference",
        "tp=2,ep=2");
  }

  @Test
  void sixHeadsDoNotSplitAcrossTpFour() throws IOException {
    String six = model("six-heads", 6, 2);
    usageError(
        "--trainer 'tp=4,pp=1,ep=1': trainer tp=4,pp=1,ep=1 for six-heads: num_attention_heads 6 is"
            + " not divisible by tp 4",
        "demo",
        "--model",
        six);
    usageError(
        "--inference 'tp=4': inference tp=4,ep=1 for six-heads: num_attention_heads 6 is not"
            + " divisible by tp 4",
        "demo",
        "--model",
        six,
        "--trainer",
        "tp=2",
        "--inference",
        "tp=4");
    // A trainer rank refuses the model as well, before it publishes anything.
    usageError(
        "num_attention_heads 6 is not divisible by tp 4",
        "publish",
        "--rank",
        "0",
        "--model",
        six,
        "--metadata",
        "file:" + dir.resolve("store"));
    accepted("demo", "--model", six, "--trainer", "tp=2", "--inference", "tp=2");
  }

  @Test
  void kvHeadsAndTpMustDivideOneAnother() throws IOException {
    String sixKv = model("six-kv-heads", 12, 6);
    usageError(
        "for six-kv-heads: num_key_value_heads 6 and tp 4 must divide one another",
        "demo",
        "--model",
        sixKv,
        "--trainer",
        "tp=4");
    usageError(
        "--inference 'tp=4': inference tp=4,ep=1 for six-kv-heads: num_key_value_heads 6 and"
            + " tp 4 must divide one another",
        "demo",
        "--model",
        sixKv,
        "--trainer",
        "tp=2",
        "--inference",
        "tp=4");
    // Fewer KV heads than tp: replicated (vLLM) or split in bands (Megatron), both valid.
    String twoKv = model("two-kv-heads", 8, 2);
    accepted("demo", "--model", twoKv, "--trainer", "tp=4", "--inference", "tp=4");
    accepted("demo", "--model", twoKv, "--trainer", "tp=8", "--inference", "tp=8");
    accepted("demo", "--model", sixKv, "--trainer", "tp=6", "--inference", "tp=2");
  }

  @Test
  void aMemoryStoreServesOnlyRanksInThisProcess() {
    String multiProcess =
        TransportProvider.registry().providers().stream()
            .filter(p -> p.isAvailable() && !p.name().equals("mem"))
            .min(Comparator.comparing((TransportProvider p) -> !p.name().equals("shm")))
            .map(TransportProvider::name)
            .orElse(null);
    accepted("demo", "--model", "tiny-llama", "--metadata", "memory:x", "--in-process");
    accepted("demo", "--model", "tiny-llama", "--metadata", "memory:x", "--transport", "mem");
    assumeTrue(
        multiProcess != null,
        "skipped: only the mem transport is available here, so every demo runs in one process");
    usageError(
        "--metadata memory: a memory store lives in one JVM and cannot be shared between"
            + " processes; use file:DIR or redis://host:port, or --in-process",
        "demo",
        "--model",
        "tiny-llama",
        "--metadata",
        "memory:x",
        "--transport",
        multiProcess);
  }

  /**
   * Fault catalogue LV14: a stall limit below a few heartbeat periods made a healthy demo fail on a
   * false stall. It is refused, naming the option and the heartbeat setting it is measured against.
   */
  @Test
  void aStallLimitBelowThreeHeartbeatPeriodsIsRefusedNamingBoth() {
    String expected =
        "--stall-limit 1 s is below 3 heartbeat periods (mx.heartbeat-period /"
            + " MX_HEARTBEAT_PERIOD_S = 2 s): a healthy peer would be taken for stalled; give at"
            + " least 6 s";
    usageError(expected, "demo", "--stall-limit", "1");
    for (String role : List.of("publish", "receive")) {
      usageError(expected, role, "--metadata", "file:" + dir, "--rank", "0", "--stall-limit", "1");
    }
    accepted("demo", "--stall-limit", "6");
  }
}
