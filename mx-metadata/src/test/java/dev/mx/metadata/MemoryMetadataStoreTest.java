package dev.mx.metadata;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.SourceRecord;
import dev.mx.api.metadata.SourceStatus;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class MemoryMetadataStoreTest extends AbstractMetadataStoreTest {
  private final String name = "test-" + UUID.randomUUID();

  @Override
  protected MetadataStore openStore() {
    return new MemoryMetadataStore(name);
  }

  @Test
  void storesOfDifferentNamesAreSeparate() {
    try (MetadataStore other = new MemoryMetadataStore(name + "-other")) {
      store.publish(new SourceRecord(identity, "w", 0, new byte[] {1}, SourceStatus.READY, 0));
      store.heartbeat(identity, "w", SourceStatus.READY);
      assertEquals(List.of(), other.listReady(identity, FRESH));
      assertEquals("memory:" + name + "-other", other.uri());
    }
  }
}
