package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.ShardTable;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two separate JVMs on one host find each other through a {@code file:} store, with no server. */
class FileStoreTwoProcessTest {
  @TempDir Path dir;

  @Test
  void aChildJvmAndThisOneDiscoverEachOther() throws Exception {
    String identity = "model=two-process;role=trainer";
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Process child =
        new ProcessBuilder(
                java.toString(),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp",
                System.getProperty("java.class.path"),
                FileStorePeer.class.getName(),
                dir.toString(),
                identity)
            .redirectError(ProcessBuilder.Redirect.INHERIT)
            .start();
    ScheduledExecutorService heartbeats = Executors.newSingleThreadScheduledExecutor();
    try (MetadataStore store = MetadataStores.open("file:" + dir)) {
      store.publish(
          new SourceRecord(
              identity,
              "parent",
              0,
              ShardTableCodec.standard().encode(TestTables.table("parent", 2, 5L, true)),
              SourceStatus.READY,
              0));
      heartbeats.scheduleWithFixedDelay(
          () -> store.heartbeat(identity, "parent", SourceStatus.READY),
          0,
          200,
          TimeUnit.MILLISECONDS);

      List<ShardTable> tables =
          Discovery.on(store)
              .withPollInterval(Duration.ofMillis(100))
              .await(identity, 2, Duration.ofSeconds(60));
      String childAgent = "child-" + child.pid();
      assertEquals(
          List.of(childAgent, "parent"),
          tables.stream().map(ShardTable::agentName).sorted().toList());
      ShardTable fromChild =
          tables.stream().filter(t -> t.agentName().equals(childAgent)).findFirst().orElseThrow();
      assertEquals(3, fromChild.entryCount());
      assertEquals(TestTables.table(childAgent, 3, 5L, true).tensors(), fromChild.tensors());

      Files.createFile(dir.resolve("done"));
      assertTrue(child.waitFor(60, TimeUnit.SECONDS), "child exits");
      String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      assertEquals(0, child.exitValue(), out);
      assertEquals("FOUND " + childAgent + ",parent", out, "the child found this JVM too");
      assertEquals(
          SourceStatus.STALE,
          store.get(identity, childAgent).orElseThrow().status(),
          "closed child is STALE");
      assertEquals(
          List.of("parent"),
          store.listReady(identity, Duration.ofSeconds(90)).stream()
              .map(SourceRecord::workerId)
              .toList());
    } finally {
      heartbeats.shutdownNow();
      child.destroyForcibly();
    }
  }
}
