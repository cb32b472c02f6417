package dev.mx.refit.embed;

import dev.mx.api.annotation.Stable;
import dev.mx.api.refit.ParamSpec;
import dev.mx.digest.safetensors.SafetensorsTensor;
import dev.mx.digest.safetensors.SafetensorsWriter;
import dev.mx.refit.LiveWeights;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Writes an inference rank's live weights, exactly what the engine would serve now, as one
 * safetensors file with the {@code step} and {@code rank} in its metadata: what a test or an
 * operator compares with the trainers' values.
 */
@Stable
public final class WeightsDump {
  private WeightsDump() {}

  /**
   * Writes {@code live} to {@code file}, creating its folder; parameters in device memory are
   * copied to the host first.
   *
   * @throws IllegalStateException when no step was ever installed, or the weights are torn (a
   *     failed in-place step), naming the rank
   */
  public static void write(LiveWeights live, Path file, int rank) throws IOException {
    if (live.lastStep() < 0) {
      throw new IllegalStateException(
          "receiver "
              + rank
              + ": no step was installed: not dumping weights that were never written");
    }
    if (live.isTorn()) {
      throw new IllegalStateException(
          "receiver "
              + rank
              + ": not dumping torn live weights: step "
              + live.tornStep()
              + " failed part-way through an in-place install over step "
              + live.lastStep());
    }
    if (file.getParent() != null) {
      Files.createDirectories(file.getParent());
    }
    try (Arena hostCopies = Arena.ofConfined()) {
      List<SafetensorsTensor> tensors = new ArrayList<>();
      for (Map.Entry<String, ParamSpec> e : live.layout().entrySet()) {
        MemorySegment bytes = live.parameter(e.getKey());
        if (live.memory().isDevice()) {
          MemorySegment host =
              hostCopies.allocate(Math.max(1, bytes.byteSize()), 64).asSlice(0, bytes.byteSize());
          live.readInto(e.getKey(), host);
          bytes = host;
        }
        tensors.add(
            new SafetensorsTensor(e.getKey(), e.getValue().dtype(), e.getValue().shape(), bytes));
      }
      SafetensorsWriter.write(
          file,
          tensors,
          Map.of("step", Long.toString(live.lastStep()), "rank", Integer.toString(rank)));
    }
  }
}
