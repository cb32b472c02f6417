package dev.mx.examples;

import dev.mx.api.DType;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.api.transport.TransportProvider;
import dev.mx.refit.embed.TpShard;
import dev.mx.refit.publish.Publisher;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The trainer side of both examples: one {@link Publisher} per TP rank, each with its own endpoint.
 */
final class Trainers implements AutoCloseable {
  private final Arena arena = Arena.ofShared();
  private final List<AutoCloseable> open = new ArrayList<>();

  /**
   * Publishes every trainer rank's shards of {@link ExampleModel#GLOBALS} under {@code identity}.
   */
  Trainers(TransportProvider transports, MetadataStore store, String identity) {
    for (int t = 0; t < ExampleModel.TRAINER_TP; t++) {
      Transport transport = transports.create(TransportConfig.of("trainer-" + t));
      open.add(transport);
      Publisher.Builder publisher =
          Publisher.builder(transport, store).identity(identity).rank(t).workerId("trainer-" + t);
      for (String name : ExampleModel.GLOBALS.keySet()) {
        TpShard shard = ExampleModel.trainerShard(name, t);
        MemorySegment local = arena.allocate(shard.shape().numel() * 4, 64);
        shard.copy(
            ExampleModel.global(arena, name), local, 4); // a real trainer already holds its shard
        publisher.tensor(name, DType.F32, shard.global(), shard.offset(), shard.shape(), local);
      }
      open.add(publisher.start()); // registers, publishes the shard table, heartbeats READY
    }
  }

  @Override
  public void close() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close(); // publishers before their transports
    }
    arena.close();
  }
}
