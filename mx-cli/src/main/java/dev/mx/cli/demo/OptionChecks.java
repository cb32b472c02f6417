package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.api.error.MxException;
import dev.mx.api.metadata.MetadataStoreProvider;
import dev.mx.api.transport.TransportProvider;
import dev.mx.api.util.Settings;
import dev.mx.cli.IoErrors;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.layout.vllm.ExpertPlacement;
import dev.mx.layout.vllm.InferenceTopology;
import dev.mx.layout.vllm.VllmLayout;
import dev.mx.metadata.MetadataStores;
import dev.mx.metadata.progress.ProgressSettings;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BooleanSupplier;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

/**
 * Checks every option value of {@code mx demo}, {@code mx publish} and {@code mx receive} before
 * the command runs, so that a bad value is a usage error (exit 2, one line naming the option) and
 * never starts a child JVM, opens a store or allocates a model. Main calls {@link #check} for every
 * command it executes.
 */
public final class OptionChecks {

  /** Dtypes the weight generator writes (ARCHITECTURE §5.4). */
  static final List<String> DTYPES = List.of("bf16", "f16", "f32");

  /** Dtypes trainers may publish: the generator's, and the quantized-source formats. */
  static final List<String> TRAINER_DTYPES =
      List.of("bf16", "f16", "f32", Fp8Format.NAME, "fp8-block-ue8m0", "mxfp8", "fp8-channel");

  /** Dtypes inference parameters may have: the generator's, the fp8 element casts, fp8-block. */
  static final List<String> INFERENCE_DTYPES =
      List.of(
          "bf16",
          "f16",
          "f32",
          "e4m3fn",
          "e5m2",
          Fp8Format.NAME,
          "fp8-block-ue8m0",
          "mxfp8",
          "fp8-tensor",
          "fp8-channel");

  /** Bounds that keep every derived size, timeout and process count far from overflow. */
  static final double MAX_TIMEOUT_SECONDS = 1_000_000;

  static final double MAX_HEARTBEAT_SECONDS = 3600;
  static final int MAX_STEPS = 1_000_000;
  static final int MAX_WORLD = 4096;

  /** The scheme of stores that live in one JVM. */
  private static final String MEMORY_SCHEME = "memory";

  private OptionChecks() {}

  /**
   * Throws a {@link ParameterException} for the first bad option value of {@code cmd}'s command.
   */
  public static void check(CommandLine cmd) {
    Object command = cmd.getCommand();
    if (command instanceof DemoCommand d) {
      job(cmd, d);
      source(cmd, d.source, d);
      // From a checkpoint, no live step at all is a run too: the dump holds the checkpoint.
      range(cmd, "--steps", d.steps, d.source.source != null ? 0 : 1, MAX_STEPS);
      if (d.metadata != null && !d.metadata.equals(DemoCommand.MX_SERVE)) {
        metadata(cmd, d.metadata, () -> d.ranksShareThisProcess(cmd.getCommandSpec()));
      }
      if (d.dump != null) {
        dumpDir(cmd, d.dump);
      }
    } else if (command instanceof PublishCommand p) {
      Job job = job(cmd, p.role);
      role(cmd, p.role);
      range(cmd, "--rank", p.rank, 0, job.trainer.worldSize() - 1);
      if (p.step < 0) {
        throw new ParameterException(cmd, "--step must be 0 or more, got " + p.step);
      }
      if (p.steps != null) {
        range(cmd, "--steps", p.steps, 1, MAX_STEPS);
      }
      seconds(cmd, "--interval", p.interval, MAX_TIMEOUT_SECONDS);
    } else if (command instanceof ReceiveCommand r) {
      Job job = job(cmd, r.role);
      role(cmd, r.role);
      range(cmd, "--rank", r.rank, 0, job.inference.tp() - 1);
      source(cmd, r.source, r.role);
      range(cmd, "--steps", r.steps, 1, MAX_STEPS);
      if (r.dump != null) {
        dumpDir(cmd, r.dump);
      }
    }
  }

  /**
   * {@code --source}: {@code checkpoint:DIR} naming a directory, for receivers whose weights are
   * plain and in host memory.
   */
  private static void source(CommandLine cmd, SourceOption s, JobOptions o) {
    if (s.source == null) {
      return;
    }
    Path dir = SourceOption.checkpointDir(s.resolved(cmd.getCommandSpec()));
    if (!Files.isDirectory(dir)) {
      throw new ParameterException(
          cmd, "--source " + s.source + ": " + dir + " is not a directory");
    }
    if (Fp8Format.isFp8Block(o.trainerDtype)) {
      throw new ParameterException(
          cmd,
          "--source checkpoint: cannot be combined with --trainer-dtype "
              + o.trainerDtype
              + ": a checkpoint holds plain weights, the receivers expect quantized sources");
    }
    if (o.device != null && !o.device.equals("host")) {
      throw new ParameterException(
          cmd,
          "--source checkpoint: cannot be combined with --device "
              + o.device
              + ": a checkpoint installs into host memory");
    }
  }

  /** The resolved job, for the rank checks. */
  private record Job(TrainerTopology trainer, InferenceTopology inference) {}

  private static Job job(CommandLine cmd, JobOptions o) {
    ModelArchitecture model;
    try {
      model = ModelConfigs.load(o.model);
    } catch (MxException | IllegalArgumentException e) {
      throw new ParameterException(cmd, "--model '" + o.model + "': " + e.getMessage());
    }
    requireGiven(
        cmd,
        "--trainer",
        o.trainer,
        "tp=N,pp=N,ep=N,dp=N (etp=N, pp-first=N, pp-last=N) or fsdp=N");
    Map<String, Integer> t;
    try {
      t = Topology.trainer("--trainer", o.trainer);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(cmd, e.getMessage());
    }
    TrainerTopology trainer;
    if (t.get("fsdp") > 1) {
      trainer = new TrainerTopology.Fsdp(t.get("fsdp"));
    } else {
      try {
        trainer = TrainerTopology.Megatron.of(t);
      } catch (dev.mx.layout.LayoutException e) {
        throw new ParameterException(cmd, "--trainer '" + o.trainer + "': " + e.getMessage());
      }
    }
    if (trainer.worldSize() > MAX_WORLD) {
      throw new ParameterException(
          cmd,
          "--trainer '"
              + o.trainer
              + "': "
              + trainer.worldSize()
              + " ranks exceed the limit of "
              + MAX_WORLD);
    }
    Map<String, Integer> i = topology(cmd, "--inference", o.inference, "tp", "ep");
    if (i.get("ep") != 1 && !i.get("ep").equals(i.get("tp"))) {
      throw new ParameterException(
          cmd, "--inference '" + o.inference + "': ep must be 1 or equal to tp");
    }
    if (i.get("tp") > MAX_WORLD) {
      throw new ParameterException(
          cmd,
          "--inference '"
              + o.inference
              + "': tp "
              + i.get("tp")
              + " exceeds the limit of "
              + MAX_WORLD);
    }
    InferenceTopology inference = new InferenceTopology(i.get("tp"), i.get("ep"));
    boolean source = Fp8Format.isFp8Block(o.trainerDtype);
    DType trainerDtype =
        source ? null : dtype(cmd, "--trainer-dtype", o.trainerDtype, TRAINER_DTYPES);
    boolean fp8Block = quantizedInference(o) != null;
    DType inferenceDtype = fp8Block ? null : inferenceDtype(cmd, o.inferenceDtype);
    DType dtype = trainerDtype != null ? trainerDtype : model.torchDtype().orElse(DType.BF16);
    try {
      trainer.layout(model, dtype);
    } catch (MxException | IllegalArgumentException e) {
      throw new ParameterException(cmd, "--trainer '" + o.trainer + "': " + e.getMessage());
    }
    ExpertPlacement placement = null;
    if (o.expertMap != null) {
      try {
        placement = ExpertMapOption.resolve(o.expertMap, model);
        placement.requireFits(inference);
      } catch (MxException | IllegalArgumentException e) {
        throw new ParameterException(
            cmd, ExpertMapOption.NAME + " '" + o.expertMap + "': " + e.getMessage());
      }
    }
    VllmLayout rank0;
    try {
      rank0 =
          new VllmLayout(
              model, inference, 0, inferenceDtype != null ? inferenceDtype : dtype, placement);
    } catch (MxException | IllegalArgumentException e) {
      throw new ParameterException(cmd, "--inference '" + o.inference + "': " + e.getMessage());
    }
    if (source) {
      quantizedSourceOptions(cmd, o);
    }
    fp8Block(cmd, o, fp8Block, rank0);
    if (source) {
      quantizedSourceLayouts(cmd, o, model, trainer, inference, placement, dtype);
    }
    range(cmd, "--changed", o.changed, 0, 100);
    oneOf(cmd, "--wire", o.wire, List.of("fused", "phased"));
    oneOf(cmd, "--verify", o.verify, List.of("all", "strict", "whole-shards", "off"));
    transport(cmd, o.transport);
    if (o.timeoutSeconds != null) {
      seconds(cmd, "--timeout", o.timeoutSeconds, MAX_TIMEOUT_SECONDS);
    }
    if (o.stallLimitSeconds != null) {
      seconds(cmd, "--stall-limit", o.stallLimitSeconds, MAX_TIMEOUT_SECONDS);
      try {
        ProgressSettings.requireSpansHeartbeats(
            "--stall-limit", o.stallLimitSeconds, Settings.system());
      } catch (IllegalArgumentException e) {
        throw new ParameterException(cmd, e.getMessage());
      }
    }
    return new Job(trainer, inference);
  }

  private static void role(CommandLine cmd, RoleOptions o) {
    if (o.metadata == null || o.metadata.isBlank()) {
      throw new ParameterException(
          cmd, "--metadata must name a store: file:DIR or redis://host:port");
    }
    // A trainer rank and an inference rank are always separate processes.
    metadata(cmd, o.metadata, () -> false);
    seconds(cmd, "--heartbeat", o.heartbeatSeconds, MAX_HEARTBEAT_SECONDS);
    if (o.identity != null && o.identity.isBlank()) {
      throw new ParameterException(cmd, "--identity must not be empty");
    }
  }

  /**
   * {@code --metadata}: a scheme a provider on the class path serves and can open here; {@code
   * memory:} only where every rank is a thread of this JVM. Opens nothing, and names the scheme
   * rather than the URI, which may hold a password.
   */
  private static void metadata(CommandLine cmd, String uri, BooleanSupplier oneProcess) {
    int colon = uri.indexOf(':');
    List<MetadataStoreProvider> providers = MetadataStores.registry().providers();
    String known =
        String.join(", ", providers.stream().map(MetadataStoreProvider::scheme).sorted().toList());
    if (colon <= 0) {
      throw new ParameterException(
          cmd,
          "--metadata has no scheme: expected file:DIR or redis://host:port (known schemes: "
              + known
              + ")");
    }
    String scheme = uri.substring(0, colon).toLowerCase(Locale.ROOT);
    MetadataStoreProvider provider =
        providers.stream()
            .filter(p -> p.scheme().equalsIgnoreCase(scheme))
            .findFirst()
            .orElse(null);
    if (provider == null) {
      throw new ParameterException(
          cmd,
          "--metadata: no metadata store for scheme '" + scheme + "'; known schemes: " + known);
    }
    if (!provider.isAvailable()) {
      throw new ParameterException(
          cmd,
          "--metadata: scheme '" + scheme + "' is unavailable: " + provider.unavailabilityCause());
    }
    if (scheme.equals(MEMORY_SCHEME) && !oneProcess.getAsBoolean()) {
      throw new ParameterException(
          cmd,
          "--metadata "
              + MEMORY_SCHEME
              + ": a memory store lives in one JVM and cannot be shared between processes;"
              + " use file:DIR or redis://host:port"
              + (cmd.getCommand() instanceof DemoCommand ? ", or --in-process" : ""));
    }
  }

  private static Map<String, Integer> topology(
      CommandLine cmd, String option, String text, String... keys) {
    requireGiven(cmd, option, text, String.join("=N,", keys) + "=N");
    try {
      return Topology.parse(option, text, keys);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(cmd, e.getMessage());
    }
  }

  /** A topology option must name sizes; {@code expected} says which. */
  private static void requireGiven(CommandLine cmd, String option, String text, String expected) {
    if (text == null || text.isBlank()) {
      throw new ParameterException(cmd, option + " must not be empty: expected " + expected);
    }
  }

  /** {@code --quant-block} and {@code --quant-params} only with fp8-block, and valid there. */
  private static void fp8Block(CommandLine cmd, JobOptions o, boolean fp8Block, VllmLayout rank0) {
    if (!fp8Block) {
      refuseGiven(
          cmd,
          o,
          true,
          "needs --inference-dtype "
              + Fp8Format.NAME
              + " (got "
              + (o.inferenceDtype == null ? "the trainer dtype" : o.inferenceDtype)
              + ")");
      return;
    }
    dev.mx.refit.cast.QuantFormat format = Fp8Format.format(quantizedInference(o));
    if (!format.hasBlock()) {
      refuseGiven(
          cmd,
          o,
          false,
          "needs a block format (--inference-dtype fp8-block or fp8-block-ue8m0), not "
              + format.label());
    }
    if (o.quantBlock != null && !Fp8Format.supportedBlock(o.quantBlock)) {
      throw new ParameterException(
          cmd,
          "--quant-block "
              + o.quantBlock
              + ": must be a power of two from "
              + Fp8Format.MIN_BLOCK
              + " to "
              + Fp8Format.MAX_BLOCK);
    }
    try {
      o.fp8Rounding();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          cmd,
          (o.fp8Rounding != null ? "--fp8-rounding '" + o.fp8Rounding + "': " : "")
              + e.getMessage());
    }
    if (o.device != null && !o.device.equalsIgnoreCase("host")) {
      throw new ParameterException(
          cmd,
          "--inference-dtype "
              + format.label()
              + " quantizes into host weights: --device '"
              + o.device
              + "' is not supported with it yet");
    }
    int block =
        o.quantBlock == null ? dev.mx.refit.cast.BlockQuantizer.DEFAULT_BLOCK : o.quantBlock;
    if (o.quantParams != null) {
      List<String> globs = Fp8Format.globs(o.quantParams);
      if (globs.isEmpty()) {
        throw new ParameterException(
            cmd, "--quant-params '" + o.quantParams + "': names no parameter glob");
      }
      try {
        dev.mx.layout.vllm.Fp8BlockLayout.matching(rank0, block, globs, true);
      } catch (MxException e) {
        throw new ParameterException(
            cmd, "--quant-params '" + o.quantParams + "': " + e.getMessage());
      }
    }
    try {
      Fp8Format.layout(o.inferenceLabel(null), rank0);
    } catch (MxException e) {
      throw new ParameterException(
          cmd,
          "--inference-dtype "
              + format.label()
              + " (block "
              + block
              + ") under --inference '"
              + o.inference
              + "': "
              + e.getMessage()
              + "; --fp8-partial-blocks quantizes it so");
    }
  }

  /**
   * The format label receivers install in: {@code --inference-dtype}'s when it names one, else the
   * trainers' quantized-source format when {@code --inference-dtype} is not given; null for plain
   * installs.
   */
  private static String quantizedInference(JobOptions o) {
    if (Fp8Format.isFp8Block(o.inferenceDtype)) {
      return o.inferenceDtype;
    }
    return o.inferenceDtype == null && Fp8Format.isFp8Block(o.trainerDtype) ? o.trainerDtype : null;
  }

  /**
   * {@code --trainer-dtype FORMAT}: a format that has quantized sources, installed in that format,
   * with every trainer rank's shards and every inference rank's slices on tile boundaries.
   */
  private static void quantizedSourceOptions(CommandLine cmd, JobOptions o) {
    String option = "--trainer-dtype " + o.trainerDtype;
    try {
      Fp8Format.tiles(o.trainerDtype + ":" + Fp8Format.MIN_BLOCK);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(cmd, option + ": " + e.getMessage());
    }
    dev.mx.refit.cast.QuantFormat format = Fp8Format.format(o.trainerDtype);
    if (o.inferenceDtype != null && !Fp8Format.isFp8Block(o.inferenceDtype)) {
      throw new ParameterException(
          cmd,
          "--inference-dtype "
              + o.inferenceDtype
              + ": the trainers publish "
              + format.label()
              + " sources, which receivers install unchanged; a dequantizing install is not built"
              + " (drop --inference-dtype)");
    }
    if (o.inferenceDtype != null && Fp8Format.format(o.inferenceDtype) != format) {
      throw new ParameterException(
          cmd,
          "--inference-dtype "
              + o.inferenceDtype
              + ": the trainers publish "
              + format.label()
              + " sources; installing them as "
              + Fp8Format.format(o.inferenceDtype).label()
              + " would quantize values already quantized (drop --inference-dtype, or publish "
              + Fp8Format.format(o.inferenceDtype).label()
              + ")");
    }
    if (o.quantParams != null) {
      throw new ParameterException(
          cmd,
          "--quant-params '"
              + o.quantParams
              + "': with "
              + option
              + " the trainers publish every linear weight quantized");
    }
  }

  /**
   * The layouts of {@code --trainer-dtype FORMAT}: every trainer rank's shards and every inference
   * rank's slices on tile boundaries.
   */
  private static void quantizedSourceLayouts(
      CommandLine cmd,
      JobOptions o,
      ModelArchitecture model,
      TrainerTopology trainer,
      InferenceTopology inference,
      ExpertPlacement placement,
      DType dtype) {
    String option = "--trainer-dtype " + o.trainerDtype;
    String trainerLabel = o.trainerLabel();
    dev.mx.layout.model.ScaleTiles tiles = Fp8Format.tiles(trainerLabel);
    try {
      for (var rank : trainer.layout(model, dtype).ranks()) {
        dev.mx.layout.trainer.QuantizedShards.split(
            rank, name -> Fp8Format.quantizedTensor(model, name), tiles);
      }
    } catch (MxException e) {
      throw new ParameterException(
          cmd, option + " under --trainer '" + o.trainer + "': " + e.getMessage());
    }
    var manifest =
        dev.mx.layout.vllm.QuantizedSourceGeometry.manifest(
            model, dtype, tiles, Fp8Format::quantizedTensor);
    for (int r : new java.util.TreeSet<>(List.of(0, inference.worldSize() - 1))) {
      try {
        VllmLayout layout = new VllmLayout(model, inference, r, dtype, placement);
        new dev.mx.layout.vllm.QuantizedSourceGeometry(
                layout, Fp8Format.layout(o.inferenceLabel(trainerLabel), layout), tiles)
            .capture(manifest);
      } catch (MxException e) {
        throw new ParameterException(
            cmd, option + " under --inference '" + o.inference + "': " + e.getMessage());
      }
    }
  }

  /**
   * Fails naming the first of the block options given ({@code --quant-block}, {@code
   * --fp8-partial-blocks}; with {@code everyFp8Option} also {@code --fp8-rounding} and {@code
   * --quant-params}), with its value and {@code why}.
   */
  private static void refuseGiven(
      CommandLine cmd, JobOptions o, boolean everyFp8Option, String why) {
    String[][] options = {
      {"--quant-block", o.quantBlock == null ? null : o.quantBlock.toString()},
      {"--fp8-partial-blocks", o.fp8PartialBlocks ? "true" : null},
      {"--fp8-rounding", everyFp8Option ? o.fp8Rounding : null},
      {"--quant-params", everyFp8Option ? o.quantParams : null}
    };
    for (String[] given : options) {
      if (given[1] != null) {
        throw new ParameterException(cmd, given[0] + " '" + given[1] + "': " + why);
      }
    }
  }

  /** An inference dtype: the generator's, or an fp8 element cast ({@code e4m3fn}, {@code e5m2}). */
  private static DType inferenceDtype(CommandLine cmd, String label) {
    if (label == null) {
      return null;
    }
    DType t = fp8Cast(label);
    return t != null ? t : dtype(cmd, "--inference-dtype", label, INFERENCE_DTYPES);
  }

  /** The fp8 dtype an element-cast label names ({@code e4m3fn}, {@code e5m2}, ...), else null. */
  static DType fp8Cast(String label) {
    if (label.equalsIgnoreCase("e4m3fn")) {
      return DType.F8_E4M3FN;
    }
    try {
      DType t = DType.parse(label);
      return t == DType.F8_E4M3FN || t == DType.F8_E5M2 ? t : null;
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  private static DType dtype(CommandLine cmd, String option, String label) {
    return dtype(cmd, option, label, DTYPES);
  }

  private static DType dtype(CommandLine cmd, String option, String label, List<String> known) {
    if (label == null) {
      return null;
    }
    DType t;
    try {
      t = DType.parse(label);
    } catch (IllegalArgumentException e) {
      throw new ParameterException(
          cmd, option + " '" + label + "': must be one of " + String.join(", ", known));
    }
    if (!DTYPES.contains(t.shortName())) {
      throw new ParameterException(
          cmd, option + " '" + label + "': must be one of " + String.join(", ", known));
    }
    return t;
  }

  private static void transport(CommandLine cmd, String name) {
    if (name == null || name.isBlank()) {
      throw new ParameterException(cmd, "--transport must not be empty");
    }
    List<String> names =
        TransportProvider.registry().providers().stream().map(TransportProvider::name).toList();
    if (!name.equals("auto") && !names.contains(name)) {
      throw new ParameterException(
          cmd,
          "--transport '"
              + name
              + "': must be auto or one of "
              + String.join(", ", names)
              + " (see mx transports)");
    }
  }

  private static void oneOf(CommandLine cmd, String option, String value, List<String> allowed) {
    if (!allowed.contains(value)) {
      throw new ParameterException(
          cmd,
          option
              + " must be "
              + String.join(", ", allowed.subList(0, allowed.size() - 1))
              + " or "
              + allowed.getLast()
              + ", got '"
              + value
              + "'");
    }
  }

  /**
   * The value of {@code option} as the user typed it ({@code 99999999}, not the double's {@code
   * 9.9999999E7}); a default that was not typed is written out in plain digits.
   */
  static String typed(CommandLine cmd, String option, double value) {
    CommandLine.ParseResult parsed = cmd.getParseResult();
    if (parsed != null && parsed.matchedOption(option) != null) {
      List<String> typed = parsed.matchedOption(option).stringValues();
      if (!typed.isEmpty()) {
        return typed.getLast();
      }
    }
    return Double.isFinite(value)
        ? java.math.BigDecimal.valueOf(value).stripTrailingZeros().toPlainString()
        : String.valueOf(value);
  }

  /**
   * A staging budget: a positive byte count ({@code 67108864}, {@code 64m}, {@code 1g}) no larger
   * than this host's memory (ST12, ST13: a budget past it overflowed a slab size or ended in an
   * OutOfMemoryError at the first refit).
   *
   * @return the budget in bytes
   */
  public static long stagingBudget(CommandLine cmd, String option, String value) {
    long b;
    try {
      b = dev.mx.refit.stage.StagingWaves.parseBytes(value.trim());
    } catch (NumberFormatException e) {
      b = -1;
    }
    if (b <= 0) {
      throw new ParameterException(
          cmd,
          option + " must be a positive byte count (e.g. 67108864, 64m, 1g), got '" + value + "'");
    }
    long host = MemoryWatch.total();
    if (host > 0 && b > host) {
      throw new ParameterException(
          cmd,
          option
              + " "
              + value.trim()
              + " ("
              + b
              + " bytes) is more than this host's memory ("
              + host
              + " bytes, MemTotal in /proc/meminfo)");
    }
    return b;
  }

  /** Bad usage naming {@code option} unless {@code min <= value <= max}. */
  public static void range(CommandLine cmd, String option, long value, long min, long max) {
    if (value < min || value > max) {
      throw new ParameterException(
          cmd,
          option
              + " "
              + value
              + " is out of range: must be "
              + (min == max ? String.valueOf(min) : "from " + min + " to " + max));
    }
  }

  private static void seconds(CommandLine cmd, String option, double value, double max) {
    if (!(value > 0) || value > max) {
      throw new ParameterException(
          cmd,
          option
              + " "
              + typed(cmd, option, value)
              + " is out of range: must be more than 0 and at most "
              + (long) max
              + " seconds");
    }
  }

  /**
   * Creates the dump folder now, so that a file in the way or a read-only file system fails before
   * the run.
   */
  private static void dumpDir(CommandLine cmd, Path dir) {
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new ParameterException(cmd, "--dump '" + dir + "': is a file, not a directory");
    }
    try {
      Files.createDirectories(dir);
      if (!Files.isWritable(dir)) {
        throw new ParameterException(cmd, "--dump '" + dir + "': not writable");
      }
    } catch (IOException e) {
      throw new ParameterException(cmd, "--dump '" + dir + "': " + IoErrors.reason(e, dir));
    }
  }
}
