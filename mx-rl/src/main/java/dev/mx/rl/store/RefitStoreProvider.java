package dev.mx.rl.store;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import java.net.URI;
import java.time.Duration;

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
    return new RefitMetadataStore(uri.toString(), host, port, entryDeadline(uri));
  }

  /** The query parameter that bounds the wait for one publisher's directory entry. */
  static final String ENTRY_DEADLINE = "entry-deadline-ms";

  /**
   * {@code ?entry-deadline-ms=N}: how long a receiver waits for one publisher's directory entry
   * before skipping it (default 2000). Hundreds of simulated participants in one JVM (the scale
   * bench) need more than a real host does.
   */
  private static Duration entryDeadline(URI uri) {
    String query = uri.getQuery();
    if (query == null || query.isEmpty()) {
      return RefitMetadataStore.ENTRY_DEADLINE;
    }
    String prefix = ENTRY_DEADLINE + "=";
    if (!query.startsWith(prefix) || query.contains("&")) {
      throw new IllegalArgumentException(
          "metadata store URI '"
              + uri
              + "': the only query parameter an mx:// store takes is "
              + ENTRY_DEADLINE
              + "=MILLISECONDS");
    }
    String value = query.substring(prefix.length());
    long ms;
    try {
      ms = Long.parseLong(value);
    } catch (NumberFormatException e) {
      ms = -1;
    }
    if (ms < 1 || ms > 3_600_000) {
      throw new IllegalArgumentException(
          "metadata store URI '"
              + uri
              + "': "
              + ENTRY_DEADLINE
              + " '"
              + value
              + "' is not a whole number of milliseconds from 1 to 3600000");
    }
    return Duration.ofMillis(ms);
  }
}
