package dev.mx.metadata;

import dev.mx.api.annotation.Stable;
import dev.mx.api.error.NoProviderException;
import dev.mx.api.metadata.MetadataStore;
import dev.mx.api.metadata.MetadataStoreProvider;
import dev.mx.api.spi.ProviderRegistry;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Opens a {@link MetadataStore} by URI, choosing the {@link MetadataStoreProvider} by scheme:
 * {@code memory:NAME} (one JVM), {@code file:DIR} (one host, many processes), {@code
 * redis://[:password@]host:port[/db]} (many hosts). Providers are found with {@link
 * java.util.ServiceLoader}, so a jar can add a scheme.
 */
@Stable
public final class MetadataStores {
  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*");

  private MetadataStores() {}

  /** The metadata-store providers on the class path. */
  public static ProviderRegistry<MetadataStoreProvider> registry() {
    return ProviderRegistry.load(
        MetadataStoreProvider.class,
        "metadata store",
        MetadataSetting.STORE_PROVIDER.property(),
        MetadataSetting.STORE_PROVIDER.env());
  }

  /** Opens the store {@code uri} names with the providers on the class path. */
  public static MetadataStore open(String uri) {
    return open(uri, registry());
  }

  /**
   * Opens the store {@code uri} names with the given providers.
   *
   * @throws NoProviderException when no provider serves the scheme (the message lists the known
   *     schemes) or the one that does is unavailable
   * @throws IllegalArgumentException when {@code uri} has no scheme
   */
  public static MetadataStore open(String uri, ProviderRegistry<MetadataStoreProvider> registry) {
    int colon = uri == null ? -1 : uri.indexOf(':');
    List<MetadataStoreProvider> providers = registry.providers();
    if (colon <= 0 || !SCHEME.matcher(uri.substring(0, colon)).matches()) {
      throw new IllegalArgumentException(
          "metadata store URI '"
              + redact(uri)
              + "' has no scheme; known schemes: "
              + schemes(providers)
              + " (e.g. memory:NAME, file:/DIR, redis://host:6379)");
    }
    String scheme = uri.substring(0, colon).toLowerCase(Locale.ROOT);
    for (MetadataStoreProvider p : providers) {
      if (p.scheme().equalsIgnoreCase(scheme)) {
        if (!p.isAvailable()) {
          NoProviderException e =
              new NoProviderException(
                  "metadata store scheme '"
                      + scheme
                      + "' is provided by "
                      + p.artifact()
                      + " but unavailable: "
                      + p.unavailabilityCause());
          if (p.unavailabilityCause() != null) {
            e.initCause(p.unavailabilityCause());
          }
          throw e;
        }
        return p.open(toUri(uri, scheme));
      }
    }
    throw new NoProviderException(
        "no metadata store for scheme '"
            + scheme
            + "' (in '"
            + redact(uri)
            + "'); known schemes: "
            + schemes(providers)
            + ". "
            + registry.describeAll());
  }

  private static URI toUri(String uri, String scheme) {
    try {
      return new URI(uri);
    } catch (URISyntaxException e) {
      // Paths with spaces and the like: let URI quote what it must.
      try {
        return new URI(scheme, uri.substring(scheme.length() + 1), null);
      } catch (URISyntaxException again) {
        throw new IllegalArgumentException(
            "metadata store URI '" + redact(uri) + "' is malformed: " + again.getMessage(), again);
      }
    }
  }

  private static String schemes(List<MetadataStoreProvider> providers) {
    return String.join(
        ", ", providers.stream().map(MetadataStoreProvider::scheme).sorted().toList());
  }

  /** The URI with a password ({@code :secret@}) replaced, for messages. */
  static String redact(String uri) {
    return uri == null ? "null" : uri.replaceAll("//([^/@]*):[^/@]*@", "//$1:***@");
  }
}
