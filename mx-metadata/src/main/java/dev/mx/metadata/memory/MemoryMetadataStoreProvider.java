package dev.mx.metadata.memory;

import dev.mx.api.annotation.Internal;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import java.net.URI;

/** Opens {@code memory:NAME} stores: one JVM, shared by name. Always available. */
@Internal
public final class MemoryMetadataStoreProvider extends MetadataStoreProvider {

  @Override
  public String scheme() {
    return "memory";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public MetadataStore open(URI uri) {
    String name = uri.getSchemeSpecificPart();
    return new MemoryMetadataStore(name == null ? "" : name);
  }
}
