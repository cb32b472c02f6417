package dev.mx.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.mx.api.plan.BoundingDecision;
import dev.mx.api.plan.BoundingMode;
import dev.mx.api.plan.TransferPlan;
import dev.mx.api.util.Settings;
import dev.mx.plan.BoundingSummary;
import dev.mx.plan.PlanOptions;
import dev.mx.plan.ReshardPlanner;
import dev.mx.plan.UnsupportedCause;
import dev.mx.plan.json.PlanJson;
import dev.mx.plan.json.StrictJson;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code mx plan FILE|-}: plans a transfer from a JSON request (ARCHITECTURE §5.3) and prints the
 * plan.
 */
@Command(
    name = "plan",
    mixinStandardHelpOptions = true,
    description = {
      "Plan the byte reads for recorded copies from published shards and print the plan.",
      "The planner is ModelExpress's (ARCHITECTURE §7.3); the plan is JSON (ARCHITECTURE §5.3),",
      "or a short table with --summary.",
      "The bounding threshold comes from --max-segments-per-copy, else the file's",
      "max_segments_per_copy, else MX_RESHARD_MAX_SEGMENTS_PER_COPY, else 64.",
      "--bounding shard (or \"bounding\": \"shard\" in the file) lets a cost model",
      "choose per source between exact reads, staging the touched shards whole and",
      "a full pull. Costs: -Dmx.plan.cost.descriptor-us, -Dmx.plan.cost.wire-gbps,",
      "-Dmx.plan.cost.copy-gbps (or MX_PLAN_COST_*); extra wire bytes per source are",
      "bounded by -Dmx.plan.max-extra-wire-ratio (MX_PLAN_MAX_EXTRA_WIRE_RATIO, 7)."
    })
final class PlanCommand implements Callable<Integer> {
  private static final int CAUSES_SHOWN = 3;

  @Parameters(
      index = "0",
      paramLabel = "FILE",
      description = "The planning request, or - to read standard input.")
  String input;

  @Option(names = "--summary", description = "Print a short human table instead of the JSON plan.")
  boolean summary;

  @Option(names = "--json", description = "Print the JSON plan (the default).")
  boolean json;

  @Option(
      names = "--max-segments-per-copy",
      paramLabel = "N",
      description = "Bound: a source with a copy needing more than N segments is pulled whole.")
  Integer maxSegmentsPerCopy;

  @Option(
      names = "--bounding",
      paramLabel = "MODE",
      description =
          "modelexpress (the default: ModelExpress-compatible output) or shard (the cost model).")
  String bounding;

  @Option(
      names = "--max-descriptors",
      paramLabel = "N",
      description = "Refuse a plan needing more than N descriptors (default ${DEFAULT-VALUE}).")
  long maxDescriptors = DEFAULT_MAX_DESCRIPTORS;

  /**
   * Printed as JSON, each segment costs a few hundred bytes of heap: bound what one request may ask
   * for.
   */
  static final long DEFAULT_MAX_DESCRIPTORS = 2_000_000;

  private static final int DECISIONS_SHOWN = 10;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws IOException {
    if (summary && json) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--summary and --json exclude each other");
    }
    if (maxSegmentsPerCopy != null && maxSegmentsPerCopy < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--max-segments-per-copy must be at least 1, got " + maxSegmentsPerCopy);
    }
    if (maxDescriptors < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--max-descriptors must be at least 1, got " + maxDescriptors + "; try --help");
    }
    BoundingMode mode = null;
    if (bounding != null) {
      try {
        mode = BoundingMode.parse(bounding);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.ParameterException(
            spec.commandLine(), "--bounding: " + e.getMessage() + "; try --help");
      }
    }
    String what = input.equals("-") ? "<stdin>" : input;
    PlanJson.PlanRequest request;
    try {
      request = PlanJson.read(readJson(what));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
    }
    ReshardPlanner planner = new ReshardPlanner();
    if (mode == null) {
      mode = request.bounding() != null ? request.bounding() : BoundingMode.MODELEXPRESS;
    }
    int threshold =
        maxSegmentsPerCopy != null
            ? maxSegmentsPerCopy
            : request.maxSegmentsPerCopy() != null
                ? request.maxSegmentsPerCopy()
                : planner.maxSegmentsPerCopy();
    TransferPlan plan;
    PlanOptions options;
    try {
      options =
          PlanOptions.fromSettings(mode, Settings.system())
              .withMaxSegmentsPerCopy(threshold)
              .withMaxDescriptors(maxDescriptors);
      plan = planner.plan(request.capture(), request.sources(), options);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
    } catch (ArithmeticException e) {
      // PlanJson bounds every size it reads; this is the net for sums the planner derives.
      throw new IllegalArgumentException(
          what + ": a size derived from the request overflows 64 bits (" + e.getMessage() + ")", e);
    }
    PrintWriter out = spec.commandLine().getOut();
    if (summary) {
      printSummary(plan, threshold, out);
      if (plan.bounding() == BoundingMode.SHARD) {
        printBounding(plan, options, out);
      }
    } else {
      Json.print(out, PlanJson.write(plan));
    }
    return 0;
  }

  private JsonNode readJson(String what) throws IOException {
    if (!input.equals("-") && Files.isDirectory(Path.of(input))) {
      throw new IOException("cannot read " + what + ": is a directory");
    }
    try (InputStream in = input.equals("-") ? System.in : Files.newInputStream(Path.of(input))) {
      return StrictJson.read(in);
    } catch (IOException e) {
      throw new IOException("cannot read " + what + ": " + IoErrors.reason(e, what), e);
    }
  }

  static void printSummary(TransferPlan plan, int threshold, PrintWriter out) {
    long fullSegments = plan.fullPulls().stream().mapToLong(f -> f.segments().size()).sum();
    long convertSegments = plan.converts().stream().mapToLong(c -> c.segments().size()).sum();
    Table t = new Table("PLAN", "VALUE");
    t.row(
        "descriptors",
        plan.descriptorCount()
            + " (exact "
            + plan.segments().size()
            + ", full pull "
            + fullSegments
            + ", convert "
            + convertSegments
            + (plan.bounding() == BoundingMode.SHARD
                ? ", staged shards " + plan.stagedShards().size()
                : "")
            + ")");
    t.row("bytes planned", bytes(plan.bytesPlanned()));
    t.row(
        "exact baseline",
        plan.exactDescriptorCount() + " descriptors, " + bytes(plan.exactBytes()));
    t.row("descriptors saved", plan.descriptorSavings());
    t.row("extra wire bytes", bytes(plan.extraWireBytes()));
    t.row(
        "full pulls",
        plan.fullPulls().size() + " sources (threshold " + threshold + " segments per copy)");
    t.row("converts", plan.converts().size() + " params");
    t.row("unbounded sources", plan.unboundedSources().size());
    t.row("fallback", plan.fallback().size() + " sources");
    t.row("sessions", plan.sessions().size());
    t.print(out);
    if (!plan.fallback().isEmpty()) {
      List<UnsupportedCause> all =
          ReshardPlanner.summarizeUnsupported(plan.fallbackReasons(), null);
      out.println();
      Table c = new Table("SOURCES", "FALLBACK CAUSE");
      for (UnsupportedCause cause : all.subList(0, Math.min(CAUSES_SHOWN, all.size()))) {
        c.row(cause.count(), cause.cause());
      }
      if (all.size() > CAUSES_SHOWN) {
        int rest =
            all.subList(CAUSES_SHOWN, all.size()).stream().mapToInt(UnsupportedCause::count).sum();
        c.row(rest, "(" + (all.size() - CAUSES_SHOWN) + " more causes)");
      }
      c.print(out);
    }
    out.flush();
  }

  /**
   * Shard mode: the costs, what each source's decision was, and the most descriptor-saving ones
   * with why.
   */
  static void printBounding(TransferPlan plan, PlanOptions options, PrintWriter out) {
    out.println();
    Table t = new Table("BOUNDING", "VALUE");
    t.row("mode", plan.bounding().label());
    t.row("costs", options.costs().toString());
    t.row("max extra wire", options.maxExtraWireRatio() + " x exact bytes per source");
    t.row("sources", BoundingSummary.counts(plan));
    t.row("staged shards", plan.stagedShards().size());
    t.print(out);
    List<BoundingDecision> shown = BoundingSummary.notable(plan, DECISIONS_SHOWN);
    if (!shown.isEmpty()) {
      out.println();
      Table d = new Table("SOURCE", "CHOSEN", "WHY");
      for (BoundingDecision x : shown) {
        d.row(x.source(), x.chosen().label(), x.reason());
      }
      int rest = plan.boundingDecisions().size() - shown.size();
      if (rest > 0) {
        d.row("(" + rest + " more)", "", "");
      }
      d.print(out);
    }
    out.flush();
  }

  /**
   * An amount of bytes planned or read, in decimal units (kB, MB, GB, TB) like every amount moved
   * that mx reports (README, "Units"), with the exact count beside it.
   */
  static String bytes(long n) {
    if (n < 1000) {
      return n + " B";
    }
    String[] units = {"kB", "MB", "GB", "TB", "PB"};
    double v = n;
    int u = -1;
    while (v >= 1000 && u < units.length - 1) {
      v /= 1000;
      u++;
    }
    return String.format(Locale.ROOT, "%.2f %s (%d B)", v, units[u], n);
  }
}
