package dev.mx.metadata.redis;

import dev.mx.api.annotation.Stable;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import dev.mx.api.util.Settings;
import dev.mx.metadata.Liveness;
import java.net.URI;

/**
 * Opens {@code redis://[:password@]host:port[/db]} stores through lettuce: many hosts, one existing
 * Redis. Available whenever lettuce is on the class path; lettuce is an optional dependency of
 * mx-metadata, so a consumer that uses {@code redis://} adds {@code io.lettuce:lettuce-core}
 * itself.
 */
@Stable
public final class RedisMetadataStoreProvider extends MetadataStoreProvider {
  private static final Throwable LETTUCE_MISSING = probeLettuce();

  private static Throwable probeLettuce() {
    try {
      Class.forName(
          "io.lettuce.core.RedisClient", false, RedisMetadataStoreProvider.class.getClassLoader());
      return null;
    } catch (ClassNotFoundException | LinkageError e) {
      // Lettuce is an optional dependency of mx-metadata: say which artifact to add.
      return new ClassNotFoundException(
          "redis:// metadata stores need the Redis client io.lettuce:lettuce-core "
              + "on the class path (mx-metadata declares it optional; add it to your build)",
          e);
    }
  }

  @Override
  public String scheme() {
    return "redis";
  }

  @Override
  public boolean isAvailable() {
    return LETTUCE_MISSING == null;
  }

  @Override
  public Throwable unavailabilityCause() {
    return LETTUCE_MISSING;
  }

  @Override
  public MetadataStore open(URI uri) {
    return new RedisMetadataStore(uri.toString(), Liveness.gcTimeout(Settings.system()));
  }
}
