package dev.mx.cli;

import dev.mx.cli.bench.BenchOptions;
import dev.mx.cli.bench.BenchResult;
import dev.mx.cli.bench.Benchmark;
import dev.mx.cli.bench.CudaBench;
import dev.mx.cli.bench.DigestBench;
import dev.mx.cli.bench.GenBench;
import dev.mx.cli.bench.KernelBench;
import dev.mx.cli.bench.MemBench;
import dev.mx.cli.bench.NixlBench;
import dev.mx.cli.bench.PlanBench;
import dev.mx.cli.bench.Qwen3PlanBench;
import dev.mx.cli.bench.RefitBench;
import dev.mx.cli.bench.ShmBench;
import dev.mx.cli.bench.UcxBench;
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
      "Run one benchmark and its baseline in the same process and print the ratio",
      "(value / baseline; higher is better)."
    })
final class BenchCommand implements Callable<Integer> {

  /** Every benchmark by name, in help order. */
  static Map<String, Benchmark> benchmarks() {
    Map<String, Benchmark> m = new LinkedHashMap<>();
    for (Benchmark b :
        List.<Benchmark>of(
            new MemBench(),
            new UcxBench(),
            new ShmBench(),
            new NixlBench(),
            new DigestBench(),
            new PlanBench(),
            new Qwen3PlanBench(),
            new RefitBench(),
            new KernelBench(),
            new GenBench(),
            new CudaBench())) {
      m.put(b.name(), b);
    }
    return m;
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

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    Benchmark b = benchmarks().get(name);
    if (b == null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "unknown benchmark '" + name + "'; known: " + String.join(", ", benchmarks().keySet()));
    }
    if (repetitions < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--repetitions must be at least 1");
    }
    OptionChecks.range(spec.commandLine(), "--threads", threads, 0, MAX_THREADS);
    List<BenchResult> results = b.run(new BenchOptions(repetitions, threads, System.err));
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
