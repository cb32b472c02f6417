package dev.mx.rl.store;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import java.net.URI;

/**
 * Opens {@code mx://host:port} stores: a RefitService server (ModelExpress's, or {@code mx serve})
 * as mx's metadata store. Always available: gRPC ships with mx-rl.
 */
@Experimental
public final class RefitStoreProvider extends MetadataStoreProvider {

  @Override
  public String scheme() {
    return "mx";
  }

  @Override
  public String artifact() {
    return "dev.mx:mx-rl";
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public MetadataStore open(URI uri) {
    String host = uri.getHost();
    int port = uri.getPort();
    if (host == null || port < 1) {
      throw new IllegalArgumentException(
          "metadata store URI '" + uri + "' must be mx://host:port (a RefitService server)");
    }
    return new RefitMetadataStore(uri.toString(), host, port);
  }
}
