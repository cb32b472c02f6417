package dev.mx.metadata;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The child process of {@link FileStoreTwoProcessTest}: publishes a table into {@code file:DIR},
 * heartbeats, discovers both publishers, prints {@code FOUND <agents>} and, once the parent has
 * found it too (the file {@code DIR/done} appears), marks itself STALE and exits.
 */
public final class FileStorePeer {
  private FileStorePeer() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    String identity = args[1];
    String agent = "child-" + ProcessHandle.current().pid();
    ScheduledExecutorService heartbeats = Executors.newSingleThreadScheduledExecutor();
    try (MetadataStore store = MetadataStores.open("file:" + dir)) {
      store.publish(
          new SourceRecord(
              identity,
              agent,
              1,
              ShardTableCodec.standard().encode(TestTables.table(agent, 3, 5L, true)),
              SourceStatus.READY,
              0));
      heartbeats.scheduleWithFixedDelay(
          () -> store.heartbeat(identity, agent, SourceStatus.READY),
          0,
          200,
          TimeUnit.MILLISECONDS);
      List<ShardTable> tables =
          Discovery.on(store)
              .withPollInterval(Duration.ofMillis(100))
              .await(identity, 2, Duration.ofSeconds(60));
      System.out.println(
          "FOUND "
              + String.join(",", tables.stream().map(ShardTable::agentName).sorted().toList()));
      System.out.flush();
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
      while (!Files.exists(dir.resolve("done")) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      heartbeats.shutdownNow();
      heartbeats.awaitTermination(10, TimeUnit.SECONDS);
      store.heartbeat(identity, agent, SourceStatus.STALE);
    }
  }
}
