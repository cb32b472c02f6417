package dev.mx.refit.version;

import dev.mx.api.DType;
import dev.mx.api.Shape;
import dev.mx.api.transport.Transport;
import dev.mx.api.transport.TransportConfig;
import dev.mx.metadata.file.FileMetadataStore;
import dev.mx.transport.mem.MemTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * The child JVM of {@link PublisherShutdownTest}: a one-rank trainer over a {@code file:} store
 * that publishes steps 0 and 1 (so it holds a slot in each), prints {@code PUBLISHED}, and waits to
 * be signalled. Arguments: store dir, model.
 */
public final class ShutdownChild {
  private ShutdownChild() {}

  public static void main(String[] args) throws Exception {
    FileMetadataStore store = new FileMetadataStore(Path.of(args[0]));
    Transport transport =
        new MemTransportProvider()
            .create(TransportConfig.of("child-" + ProcessHandle.current().pid()));
    Arena arena = Arena.global(); // lives until the test signals this process
    MemorySegment[] sets = {arena.allocate(64, 64), arena.allocate(64, 64)};
    VersionedPublisher.Builder b =
        VersionedPublisher.builder(transport, store)
            .model(args[1])
            .slot("0")
            .expectedSlots(List.of("0"))
            .workerId("child-trainer");
    for (MemorySegment s : sets) {
      b.bufferSet(
          p -> p.tensor("w", DType.F32, Shape.of(4, 4), new long[] {0, 0}, Shape.of(4, 4), s));
    }
    VersionedPublisher publisher = b.start();
    publisher.publish(0, set -> sets[set].fill((byte) 1));
    publisher.publish(1, set -> sets[set].fill((byte) 2));
    System.out.println("PUBLISHED");
    System.out.flush();
    Thread.sleep(Long.MAX_VALUE);
  }
}
