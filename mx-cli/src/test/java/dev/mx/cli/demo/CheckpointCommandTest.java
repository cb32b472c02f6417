package dev.mx.cli.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.DType;
import dev.mx.digest.safetensors.SafetensorsFile;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.layout.gen.WeightGenerator;
import dev.mx.layout.model.GlobalTensor;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.refit.checkpoint.CheckpointSource;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code mx checkpoint} writes every tensor of the model once, whole, with the generator's values
 * of the step, split over the files asked for; it refuses a directory that already holds a
 * checkpoint and dtypes a checkpoint source cannot serve.
 */
class CheckpointCommandTest {

  private record Run(int code, String out, String err) {}

  private static Run mx(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new CheckpointCommand());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void writesEveryTensorOnceWithTheGeneratorsValuesOverTheFilesAskedFor(@TempDir Path dir)
      throws Exception {
    Run r =
        mx(
            "--model",
            "tiny-llama",
            "--step",
            "5",
            "--dtype",
            "bf16",
            "--files",
            "3",
            "--out",
            dir.toString());
    assertEquals(0, r.code(), r.err());
    List<GlobalTensor> model = ModelConfigs.load("tiny-llama").tensors();
    List<String> written = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      Path f = dir.resolve(String.format("model-%05d-of-00003.safetensors", i));
      try (SafetensorsFile file = SafetensorsFile.open(f)) {
        assertEquals("5", file.metadata().get(CheckpointSource.STEP_KEY), f.toString());
        for (SafetensorsTensor t : file.tensors()) {
          written.add(t.name());
          assertEquals(DType.BF16, t.dtype(), t.name());
          assertEquals(ModelConfigs.load("tiny-llama").tensor(t.name()).shape(), t.shape());
          long last = t.shape().numel() - 1;
          for (long i2 : new long[] {0, last / 2, last}) {
            assertEquals(
                WeightGenerator.storedBits(t.name(), 5, i2, DType.BF16),
                t.data().get(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED, i2 * 2) & 0xffff,
                t.name() + "[" + i2 + "]");
          }
        }
      }
    }
    assertEquals(model.stream().map(GlobalTensor::name).toList(), written, "model order, once");
    assertTrue(
        Files.readString(dir.resolve("model.safetensors.index.json")).contains("weight_map"));
    assertTrue(r.out().contains("in 3 file(s)"), r.out());

    Run again = mx("--model", "tiny-llama", "--out", dir.toString());
    assertEquals(2, again.code());
    assertTrue(again.err().contains("holds safetensors files already"), again.err());
  }

  @Test
  void refusesADtypeACheckpointSourceCannotServe(@TempDir Path dir) {
    Run r = mx("--model", "tiny-llama", "--dtype", "i8", "--out", dir.toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("--dtype must be bf16, f16 or f32"), r.err());
  }
}
