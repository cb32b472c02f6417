package dev.mx.cli.demo;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.cli.Json;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import dev.mx.layout.gen.BoxFill;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.refit.checkpoint.CheckpointSource;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mx checkpoint}: the generator's weights of one step (ARCHITECTURE §5.4) written as a
 * Hugging Face style checkpoint: every tensor of the model whole, under its Hugging Face name and
 * shape, in {@code model-0000i-of-0000N.safetensors} files of about equal size with a {@code
 * model.safetensors.index.json} weight map, each file's metadata naming the step ({@code mx.step}).
 * Exactly what the trainers hold at that step with every tensor changed, so a receiver started from
 * it with {@code --source checkpoint:DIR} installs the bytes a refit of that step installs.
 */
@Command(
    name = "checkpoint",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Write the generator's weights of one step as a Hugging Face style checkpoint.",
      "Safetensors files with the model's tensor names and shapes, for",
      "'mx demo --source checkpoint:DIR' and 'mx receive --source checkpoint:DIR'."
    })
public final class CheckpointCommand implements Callable<Integer> {

  @Option(
      names = "--model",
      defaultValue = "llama-3.2-1b",
      description = "A bundled model or the path to a config.json (default ${DEFAULT-VALUE}).")
  String model;

  @Option(
      names = "--step",
      defaultValue = "0",
      description = "The generator step of the weights (default ${DEFAULT-VALUE}).")
  long step;

  @Option(
      names = "--dtype",
      description = "bf16, f16 or f32 (default: the model's torch_dtype, else bf16).")
  String dtype;

  @Option(
      names = "--files",
      defaultValue = "1",
      description =
          "How many safetensors files to split the tensors over (default ${DEFAULT-VALUE}).")
  int files;

  @Option(
      names = "--out",
      required = true,
      description = "The directory to write; it must hold no safetensors files yet.")
  Path out;

  @Option(names = "--json", description = "Print what was written as JSON.")
  boolean json;

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (step < 0) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--step must be >= 0, got " + step);
    }
    if (files < 1) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--files must be >= 1, got " + files);
    }
    ModelArchitecture arch = ModelConfigs.load(model);
    DType type = dtype(arch);
    requireNoCheckpointIn(out);
    Files.createDirectories(out);
    List<List<GlobalTensor>> groups = split(arch.tensors(), files, type);
    long t0 = System.nanoTime();
    long bytes = 0;
    Map<String, String> weightMap = new LinkedHashMap<>();
    List<String> names = new ArrayList<>();
    for (int i = 0; i < groups.size(); i++) {
      String name =
          String.format(
              java.util.Locale.ROOT, "model-%05d-of-%05d.safetensors", i + 1, groups.size());
      bytes += write(out.resolve(name), groups.get(i), type);
      groups.get(i).forEach(t -> weightMap.put(t.name(), name));
      names.add(name);
      spec.commandLine()
          .getErr()
          .printf("mx checkpoint: wrote %s (%d of %d)%n", name, i + 1, groups.size());
    }
    Map<String, Object> index = new LinkedHashMap<>();
    index.put("metadata", Map.of("total_size", bytes));
    index.put("weight_map", weightMap);
    Files.writeString(
        out.resolve("model.safetensors.index.json"),
        Json.mapper().writerWithDefaultPrettyPrinter().writeValueAsString(index));
    double seconds = (System.nanoTime() - t0) / 1e9;
    if (json) {
      Map<String, Object> doc = new LinkedHashMap<>();
      doc.put("ok", true);
      doc.put("dir", out.toString());
      doc.put("model", model);
      doc.put("step", step);
      doc.put("dtype", type.shortName());
      doc.put("files", names);
      doc.put("tensors", weightMap.size());
      doc.put("bytes", bytes);
      doc.put("seconds", seconds);
      Json.print(spec.commandLine().getOut(), doc);
    } else {
      spec.commandLine()
          .getOut()
          .printf(
              java.util.Locale.ROOT,
              "wrote step %d of %s: %d tensors, %.3f GB of %s in %d file(s) to %s (%.1f s)%n",
              step,
              model,
              weightMap.size(),
              bytes / 1e9,
              type.shortName(),
              names.size(),
              out,
              seconds);
    }
    return 0;
  }

  private DType dtype(ModelArchitecture arch) {
    DType t = dtype != null ? DType.parse(dtype) : arch.torchDtype().orElse(DType.BF16);
    if (!CheckpointSource.PLAIN_DTYPES.contains(t)) {
      throw new CommandLine.ParameterException(
          spec.commandLine(), "--dtype must be bf16, f16 or f32, got " + t.shortName());
    }
    return t;
  }

  private void requireNoCheckpointIn(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return;
    }
    try (Stream<Path> s = Files.list(dir)) {
      if (s.anyMatch(p -> p.getFileName().toString().endsWith(".safetensors"))) {
        throw new CommandLine.ParameterException(
            spec.commandLine(),
            "--out " + dir + " holds safetensors files already; give an empty or new directory");
      }
    }
  }

  /** The tensors in model order, cut into at most {@code n} runs of about equal bytes. */
  static List<List<GlobalTensor>> split(List<GlobalTensor> tensors, int n, DType type) {
    long total = 0;
    for (GlobalTensor t : tensors) {
      total += t.shape().byteSize(type.elementSize());
    }
    List<List<GlobalTensor>> groups = new ArrayList<>();
    List<GlobalTensor> current = new ArrayList<>();
    long done = 0;
    for (GlobalTensor t : tensors) {
      current.add(t);
      done += t.shape().byteSize(type.elementSize());
      // Close a file once it reaches its share of the bytes so far.
      if (groups.size() < n - 1 && done * n >= total * (groups.size() + 1)) {
        groups.add(current);
        current = new ArrayList<>();
      }
    }
    if (!current.isEmpty()) {
      groups.add(current);
    }
    return groups;
  }

  /** Writes {@code tensors} of {@link #step} to {@code file}; returns their bytes. */
  private long write(Path file, List<GlobalTensor> tensors, DType type) throws IOException {
    try (Arena arena = Arena.ofShared()) {
      List<BoxFill> fills = new ArrayList<>();
      List<SafetensorsTensor> out = new ArrayList<>();
      long bytes = 0;
      for (GlobalTensor t : tensors) {
        Shape shape = t.shape();
        MemorySegment data = arena.allocate(Math.max(1, shape.byteSize(type.elementSize())), 64);
        data = data.asSlice(0, shape.byteSize(type.elementSize()));
        fills.add(new BoxFill(data, type, t.name(), shape, new long[shape.rank()], shape));
        out.add(new SafetensorsTensor(t.name(), type, shape, data));
        bytes += data.byteSize();
      }
      WeightGenerator.fill(fills, step, 0);
      Map<String, String> metadata = new LinkedHashMap<>();
      metadata.put("format", "pt");
      metadata.put(CheckpointSource.STEP_KEY, Long.toString(step));
      metadata.put("mx.model", model);
      SafetensorsWriter.write(file, out, metadata);
      return bytes;
    }
  }
}
