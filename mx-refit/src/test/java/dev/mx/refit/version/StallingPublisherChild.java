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
import java.time.Duration;
import java.util.List;

/**
 * The child JVM of {@link LivenessWaitTest}: a one-rank trainer over a {@code file:} store,
 * heartbeating every 100 ms, whose writer of step 0 reports "writing step 0, 40 %", prints {@code
 * WRITING} and then never finishes, so that the test can stop or kill it mid-step. Arguments: store
 * dir, model.
 */
public final class StallingPublisherChild {
  private StallingPublisherChild() {}

  public static void main(String[] args) throws Exception {
    FileMetadataStore store = new FileMetadataStore(Path.of(args[0]));
    Transport transport =
        new MemTransportProvider()
            .create(TransportConfig.of("child-" + ProcessHandle.current().pid()));
    Arena arena = Arena.global(); // lives until the test stops or kills this process
    MemorySegment[] sets = {arena.allocate(64, 64), arena.allocate(64, 64)};
    VersionedPublisher.Builder b =
        VersionedPublisher.builder(transport, store)
            .model(args[1])
            .slot("0")
            .expectedSlots(List.of("0"))
            .workerId("stalling-child")
            .heartbeatPeriod(Duration.ofMillis(100))
            .shutdownHook(false);
    for (MemorySegment s : sets) {
      b.bufferSet(
          p -> p.tensor("w", DType.F32, Shape.of(4, 4), new long[] {0, 0}, Shape.of(4, 4), s));
    }
    VersionedPublisher publisher = b.start();
    publisher.publish(
        0,
        set -> {
          publisher.progress("writing step 0, 40 %");
          System.out.println("WRITING");
          System.out.flush();
          try {
            Thread.sleep(Long.MAX_VALUE);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
  }
}
