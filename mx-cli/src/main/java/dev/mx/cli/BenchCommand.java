package dev.mx.cli;

import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.cli.bench.Benchmarks;
import dev.mx.cli.bench.ScaleSpec;
import dev.mx.cli.demo.OptionChecks;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code mx bench NAME}: one benchmark and its baseline, measured in the same process. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = {
      "Run one benchmark and its baseline in the same process and print their ratio.",
      "The ratio is value / baseline; higher is better."
    })
final class BenchCommand implements Callable<Integer> {

  /** Every benchmark by name, in help order (those mx-bench registers, see {@link Benchmarks}). */
  static Map<String, Benchmark> benchmarks() {
    return Benchmarks.all();
  }

  static final class Names extends ArrayList<String> {
    private static final long serialVersionUID = 1L;

    Names() {
      super(benchmarks().keySet());
    }
  }

  @Parameters(
      index = "0",
      completionCandidates = Names.class,
      paramLabel = "NAME",
      description = "Benchmark to run: ${COMPLETION-CANDIDATES}.")
  String name;

  @Option(
      names = "--json",
      description =
          "Print a JSON list of {metric, value, unit, baseline_metric, baseline_value, ratio}.")
  boolean json;

  @Option(
      names = "--repetitions",
      defaultValue = "5",
      description = "Measured repetitions per metric (default ${DEFAULT-VALUE}).")
  int repetitions;

  /** More threads than any host has cores; the bound keeps per-thread arrays small. */
  private static final int MAX_THREADS = 4096;

  @Option(
      names = "--threads",
      defaultValue = "0",
      description = "Threads for multi-threaded variants (0 = all cores).")
  int threads;

  @Option(
      names = "--model",
      defaultValue = "kimi-k2",
      description = "scale: bundled model or config.json (default ${DEFAULT-VALUE}).")
  String model;

  @Option(
      names = "--trainer",
      defaultValue = "tp=2,pp=1,ep=128",
      description =
          "scale: Megatron trainer topology (default ${DEFAULT-VALUE}: 256 ranks, 3 experts per"
              + " layer each; pp=1 because Kimi-K2's 61 layers split evenly only by 1 or 61).")
  String trainer;

  @Option(
      names = "--inference",
      defaultValue = "tp=8,ep=128",
      description =
          "scale: vLLM topology (default ${DEFAULT-VALUE}: tp=8 x 16 data-parallel groups, one"
              + " expert-parallel group of 128 ranks).")
  String inference;

  @Option(
      names = "--steps",
      defaultValue = "1",
      description =
          "scale: measured control-plane steps per rank count (default ${DEFAULT-VALUE}).")
  int steps;

  @Option(
      names = "--fabric-gbps",
      defaultValue = "400",
      description =
          "scale: per-GPU fabric rate of the what-if wire model, Gb/s (default ${DEFAULT-VALUE}).")
  double fabricGbps;

  @Option(
      names = "--control-plane",
      defaultValue = ScaleSpec.REDIS,
      description =
          "scale: where the simulated participants' version protocol goes: redis (one"
              + " redis-server holds every shard table) or mx (a RefitService server over mx://"
              + " holds shard records; each trainer rank serves its own table) (default"
              + " ${DEFAULT-VALUE}).")
  String controlPlane;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    ScaleSpec scale;
    try {
      scale =
          new ScaleSpec(
              model,
              trainer,
              inference,
              steps,
              fabricGbps,
              ScaleSpec.DEFAULT.fractions(),
              controlPlane);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage(), e);
    }
    Benchmark b = benchmarks().get(name);
    if (b == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          benchmarks().isEmpty()
              ? "unknown benchmark '"
                  + name
                  + "'; no benchmarks on the class path (they ship in mx-bench's jar)"
              : "unknown benchmark '"
                  + name
                  + "'; known: "
                  + String.join(", ", benchmarks().keySet()));
    }
    if (repetitions < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--repetitions must be at least 1");
    }
    OptionChecks.range(spec.commandLine(), "--threads", threads, 0, MAX_THREADS);
    OptionChecks.range(spec.commandLine(), "--steps", steps, 1, 1000);
    if (!(fabricGbps > 0) || Double.isInfinite(fabricGbps)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--fabric-gbps " + fabricGbps + " must be a positive rate");
    }
    BenchOptions options = new BenchOptions(repetitions, threads, System.err, scale);
    try {
      b.checkUsage(options);
    } catch (IllegalArgumentException e) {
      CommandLine.ParameterException bad =
          new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
      bad.initCause(e);
      throw bad;
    }
    List<BenchResult> results = b.run(options);
    if (json) {
      List<Map<String, Object>> out = new ArrayList<>();
      for (BenchResult r : results) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("metric", r.metric());
        m.put("value", r.value());
        m.put("unit", r.unit());
        m.put("baseline_metric", r.baselineMetric());
        m.put("baseline_value", r.baselineValue());
        m.put("ratio", r.ratio());
        out.add(m);
      }
      Json.print(spec.commandLine().getOut(), out);
    } else {
      Table t = new Table("METRIC", "VALUE", "UNIT", "BASELINE", "BASELINE VALUE", "RATIO");
      for (BenchResult r : results) {
        t.row(
            r.metric(),
            fmt(r.value()),
            r.unit(),
            r.baselineMetric(),
            fmt(r.baselineValue()),
            String.format(Locale.ROOT, "%.3f", r.ratio()));
      }
      t.print(spec.commandLine().getOut());
    }
    return 0;
  }

  private static String fmt(double v) {
    return Math.abs(v) >= 1e5
        ? String.format(Locale.ROOT, "%.4g", v)
        : String.format(Locale.ROOT, "%.3f", v);
  }
}
