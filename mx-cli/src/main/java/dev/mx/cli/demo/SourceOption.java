package dev.mx.cli.demo;

import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelArchitecture;
import dev.mx.refit.checkpoint.CheckpointSource;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code --source checkpoint:DIR} of {@code mx demo} and {@code mx receive}: the receivers install
 * a checkpoint when they start, then follow the trainers.
 */
final class SourceOption {
  static final String CHECKPOINT = "checkpoint:";

  @Option(
      names = "--source",
      paramLabel = "checkpoint:DIR",
      description =
          "Where receivers take their first weights before following the trainers: checkpoint:DIR,"
              + " a directory of safetensors files with the model's Hugging Face tensor names and"
              + " shapes in bf16, f16 or f32 (e.g. written by 'mx checkpoint'). Each receiver maps"
              + " the files, installs the step their metadata names (mx.step; 0 when none) as it"
              + " starts, resharded, cast and verified like a refit, and reads the steps that"
              + " follow from the trainers. Digests are computed once and cached beside the files"
              + " (FILE.mx-digests.json, kept while size and modification time hold). Host"
              + " memory, plain (not quantized) trainer dtypes. Default: the trainers only.")
  String source;

  /** The resolved {@code --source} for a {@link WorkerSpec} (absolute directory), or null. */
  String resolved(CommandLine.Model.CommandSpec cmd) {
    if (source == null) {
      return null;
    }
    if (!source.startsWith(CHECKPOINT) || source.length() == CHECKPOINT.length()) {
      throw new CommandLine.ParameterException(
          cmd.commandLine(),
          "--source must be checkpoint:DIR (a directory of safetensors files), got '"
              + source
              + "'");
    }
    return CHECKPOINT + Path.of(source.substring(CHECKPOINT.length())).toAbsolutePath();
  }

  /** The directory of a resolved {@code checkpoint:DIR}, or null for none. */
  static Path checkpointDir(String resolved) {
    return resolved == null ? null : Path.of(resolved.substring(CHECKPOINT.length()));
  }

  /**
   * Opens the checkpoint of {@code spec} (digesting and caching it on the first open) and checks it
   * holds every tensor of the spec's model with its shape, in a plain dtype.
   *
   * @throws dev.mx.refit.checkpoint.CheckpointException naming the file and tensor at fault
   */
  static CheckpointSource open(WorkerSpec spec, ModelArchitecture model) {
    CheckpointSource cp = CheckpointSource.open(spec.checkpointDir());
    try {
      Map<String, dev.mx.api.Shape> shapes = new LinkedHashMap<>();
      for (GlobalTensor t : model.tensors()) {
        shapes.put(t.name(), t.shape());
      }
      cp.requireTensors(shapes);
      return cp;
    } catch (RuntimeException e) {
      cp.close();
      throw e;
    }
  }

  /** The step a checkpoint is installed as: its metadata's, else 0. */
  static long stepOf(CheckpointSource cp) {
    return cp.step() == null ? 0 : cp.step();
  }
}
