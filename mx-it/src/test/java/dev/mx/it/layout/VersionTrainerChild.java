package dev.mx.it.layout;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.cli.demo.VersionedTrainer;
import dev.mx.layout.model.ModelConfigs;
import dev.mx.layout.trainer.TrainerBuffers;
import dev.mx.layout.trainer.TrainerRankLayout;
import dev.mx.layout.trainer.TrainerTopology;
import dev.mx.metadata.MetadataStores;
import dev.mx.refit.version.VersionedPublisher;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * One Megatron trainer rank in its own JVM for {@link VersionFollowAcrossProcessesTest}: two generator-filled
 * buffer sets behind a {@link VersionedPublisher} over a cross-process transport, publishing steps
 * {@code 0 .. steps-1} every {@code intervalMs}, with no barrier with anyone. Prints {@code PUBLISHED <n>}
 * per step, then waits for the done file and closes.
 * Arguments: store URI, model, tp, rank, steps, interval ms, transport, done file.
 */
public final class VersionTrainerChild {
  private VersionTrainerChild() {}

  public static void main(String[] args) throws Exception {
    String model = args[1];
    int tp = Integer.parseInt(args[2]);
    int rank = Integer.parseInt(args[3]);
    int steps = Integer.parseInt(args[4]);
    long intervalMs = Long.parseLong(args[5]);
    TrainerRankLayout layout = new TrainerTopology.Megatron(tp, 1, 1).layout(ModelConfigs.load(model), DType.F32)
        .ranks().get(rank);
    TrainerBuffers[] sets = {TrainerBuffers.allocate(layout), TrainerBuffers.allocate(layout)};
    Transport transport = TransportProvider.registry().select(args[6]).create(
        new TransportConfig("trainer-" + rank, Duration.ofSeconds(30), Map.of()));
    MetadataStore store = MetadataStores.open(args[0]);
    VersionedPublisher.Builder b = VersionedPublisher.builder(transport, store).model("versions-it/" + model)
        .slot(Integer.toString(rank)).expectedSlots(IntStream.range(0, tp).mapToObj(Integer::toString).toList())
        .workerId("trainer-" + rank).rank(rank);
    b.bufferSet(VersionedTrainer.tensors(layout, sets[0])).bufferSet(VersionedTrainer.tensors(layout, sets[1]));
    try (VersionedPublisher publisher = b.start()) {
      for (long step = 0; step < steps; step++) {
        long s = step;
        publisher.publish(step, set -> sets[set].fill(s, 1));
        System.out.println("PUBLISHED " + step);
        System.out.flush();
        Thread.sleep(intervalMs);
      }
      Path done = Path.of(args[7]);
      while (!Files.exists(done)) {
        Thread.sleep(20);
      }
    } finally {
      dev.mx.api.util.Closeables.closeAll(List.of(transport, sets[1], sets[0], store));
    }
  }
}
