package dev.mx.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.cli.bench.Benchmarks;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code mx bench} with mx-bench's benchmarks on the class path, as {@code ./mx} runs it: the
 * launcher contract of ARCHITECTURE §5.1 for bad bench options (exit 2, one line naming the option,
 * "try --help"), and the help order of the registered benchmarks.
 */
class BenchUsageTest {

  @ParameterizedTest(name = "mx {0}")
  @CsvSource(
      delimiter = '|',
      value = {
        "bench mem --threads -1                             | mx bench    | --threads -1 is out of range: must be from 0 to 4096",
        "bench scale --trainer pp=4,ep=64                   | mx bench    | num_hidden_layers 61 is not divisible by pp 4",
        "bench scale --inference tp=8,ep=256                | mx bench    | num_experts 384 is not divisible by ep 256",
        "bench scale --trainer tp=128,ep=2                  | mx bench    | num_attention_heads 64 is not divisible by tp 128",
        "bench scale --steps 0                              | mx bench    | --steps 0 is out of range",
        "bench nosuch                                       | mx bench    | unknown benchmark 'nosuch'; known: mem, ucx, shm",
      })
  void aBadOptionValueExitsTwoWithOneLineNamingIt(String args, String command, String message) {
    CliProcess.assertBadUsage(CliProcess.inProcess(args.split(" ")), command, message);
  }

  @Test
  void everyBuiltInBenchmarkIsRegisteredInHelpOrder() {
    assertEquals(
        List.of(
            "mem",
            "ucx",
            "shm",
            "nixl",
            "digest",
            "plan",
            "plan-qwen3",
            "refit",
            "modelexpress",
            "kernels",
            "gen",
            "cuda",
            "scale"),
        List.copyOf(Benchmarks.all().keySet()));
    CliProcess.Run help = CliProcess.inProcess("bench", "--help");
    assertEquals(0, help.code(), help.err());
    // picocli wraps the help at 80 columns.
    String helpText = help.out().replaceAll("\\s+", " ");
    assertTrue(
        helpText.contains(
            "Benchmark to run: mem, ucx, shm, nixl, digest, plan, plan-qwen3, refit,"
                + " modelexpress, kernels, gen, cuda, scale."),
        help.out());
  }
}
