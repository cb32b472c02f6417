package dev.mx.metadata;

import dev.mx.api.metadata.MetadataStore;
import dev.mx.metadata.memory.MemoryMetadataStore;
import java.util.UUID;

/** The version suite on a {@code memory:} store. */
class MemoryWeightVersionStoreTest extends AbstractWeightVersionStoreTest {
  private final String name = "versions-" + UUID.randomUUID();

  @Override
  protected MetadataStore openStore() {
    return new MemoryMetadataStore(name);
  }
}
