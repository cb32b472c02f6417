package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.file.FileMetadataStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileMetadataStoreTest extends AbstractMetadataStoreTest {
  @TempDir Path dir;

  @Override
  protected MetadataStore openStore() {
    return new FileMetadataStore(dir);
  }

  private Path identityDir() {
    return dir.resolve(StoreNames.encode(identity));
  }

  @Test
  void layoutIsOneStateAndOneBlobFilePerWorkerWithNoTemporaryFilesLeft() throws IOException {
    byte[] blob = TestTables.blob("a", 2);
    store.publish(new SourceRecord(identity, "w:1", 4, blob, SourceStatus.READY, 0));
    store.heartbeat(identity, "w:1", SourceStatus.READY);
    try (Stream<Path> files = Files.list(identityDir())) {
      assertEquals(
          List.of("w%3A1.blob", "w%3A1.state"),
          files.map(p -> p.getFileName().toString()).sorted().toList());
    }
    assertArrayEquals(blob, Files.readAllBytes(identityDir().resolve("w%3A1.blob")));
    String state = Files.readString(identityDir().resolve("w%3A1.state"));
    assertTrue(state.contains("\"status\":\"READY\"") && state.contains("\"rank\":4"), state);
  }

  @Test
  void aDamagedStateFileIsSkippedByListingAndNamedByGet() throws IOException {
    store.publish(
        new SourceRecord(identity, "good", 0, TestTables.blob("g", 1), SourceStatus.READY, 0));
    store.heartbeat(identity, "good", SourceStatus.READY);
    store.publish(
        new SourceRecord(identity, "bad", 1, TestTables.blob("b", 1), SourceStatus.READY, 0));
    store.heartbeat(identity, "bad", SourceStatus.READY);
    Files.writeString(identityDir().resolve("bad.state"), "{\"identity\": tru");
    assertEquals(
        List.of("good"),
        store.listReady(identity, FRESH).stream().map(SourceRecord::workerId).toList());
    MetadataStoreException e =
        assertThrows(MetadataStoreException.class, () -> store.get(identity, "bad"));
    assertTrue(
        e.getMessage().contains("bad.state") && e.getMessage().contains("damaged"), e.getMessage());
  }

  @Test
  void aStateFileWrittenBeforeProgressExistedReadsAsARecordWithoutProgress() throws IOException {
    Files.createDirectories(identityDir());
    Files.write(identityDir().resolve("old.blob"), TestTables.blob("o", 1));
    Files.writeString(
        identityDir().resolve("old.state"),
        "{\"identity\":\""
            + identity
            + "\",\"worker_id\":\"old\",\"rank\":2,\"status\":\"READY\",\"updated_at\":"
            + System.currentTimeMillis()
            + "}");
    SourceRecord r = store.listReady(identity, FRESH).getFirst();
    assertEquals("old", r.workerId());
    assertEquals(2, r.rank());
    assertEquals(SourceRecord.NO_PROGRESS, r.progress());
    assertFalse(r.reportsProgress());
    assertEquals("", r.phase());
  }

  @Test
  void theDirectoryIsCreatedAndReportedInTheUri() {
    Path nested = dir.resolve("a/b/c");
    try (FileMetadataStore s = new FileMetadataStore(nested)) {
      assertTrue(Files.isDirectory(nested));
      assertEquals("file:" + nested, s.uri());
      assertEquals(List.of(), s.listReady("nobody", FRESH));
    }
  }
}
