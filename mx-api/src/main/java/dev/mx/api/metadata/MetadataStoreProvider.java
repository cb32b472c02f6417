package dev.mx.api.metadata;

import dev.mx.api.spi.MxProvider;
import java.net.URI;

/**
 * Opens {@link MetadataStore}s for one URI scheme ({@code memory:}, {@code file:}, {@code redis:}).
 */
public abstract class MetadataStoreProvider extends MxProvider {

  /** The URI scheme this provider opens, e.g. {@code redis}. */
  public abstract String scheme();

  /** Opens a store. */
  public abstract MetadataStore open(URI uri);

  @Override
  public String name() {
    return scheme();
  }

  @Override
  public String artifact() {
    return "dev.mx:mx-metadata";
  }
}
