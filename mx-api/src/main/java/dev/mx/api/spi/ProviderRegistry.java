package dev.mx.api.spi;

import dev.mx.api.error.NoProviderException;
import dev.mx.api.util.Settings;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds the providers of one kind (transports, digests, metadata stores, planners) and chooses one.
 *
 * <p>Providers come from {@link ServiceLoader} plus any {@link #register registered} by hand. They
 * are ordered by priority (highest first), then by name. {@link #select()} honours an override by
 * name from a system property (e.g. {@code -Dmx.transport=ucx}) or, failing that, an environment
 * variable ({@code MX_TRANSPORT=ucx}); without one it picks the first available provider. When
 * nothing fits the error lists every provider found and why each is unavailable.
 */
public final class ProviderRegistry<P extends MxProvider> {
  private static final Logger LOG = LoggerFactory.getLogger(ProviderRegistry.class);

  /** Orders providers by priority (highest first), then name. */
  public static final Comparator<MxProvider> ORDER =
      Comparator.comparingInt(MxProvider::priority).reversed().thenComparing(MxProvider::name);

  private final Class<P> type;
  private final String kind;
  private final String property;
  private final String envVar;
  private final Settings settings;
  private final List<P> providers = new CopyOnWriteArrayList<>();
  private final List<ServiceConfigurationError> loadFailures = new CopyOnWriteArrayList<>();

  private ProviderRegistry(
      Class<P> type, String kind, String property, String envVar, Settings settings) {
    this.type = type;
    this.kind = kind;
    this.property = property;
    this.envVar = envVar;
    this.settings = settings;
  }

  /**
   * A registry of the providers of {@code type} found on the class path.
   *
   * @param kind what the providers provide, for messages (e.g. {@code transport})
   * @param property the system property that overrides the choice by name (e.g. {@code
   *     mx.transport})
   * @param envVar the environment variable that overrides it when the property is unset
   */
  public static <P extends MxProvider> ProviderRegistry<P> load(
      Class<P> type, String kind, String property, String envVar) {
    return load(type, kind, property, envVar, Settings.system());
  }

  /**
   * As {@link #load(Class, String, String, String)}, reading the overrides from {@code settings}.
   */
  public static <P extends MxProvider> ProviderRegistry<P> load(
      Class<P> type, String kind, String property, String envVar, Settings settings) {
    ProviderRegistry<P> registry = new ProviderRegistry<>(type, kind, property, envVar, settings);
    ServiceLoader<P> loader = ServiceLoader.load(type, type.getClassLoader());
    Iterator<P> it = loader.iterator();
    while (true) {
      try {
        if (!it.hasNext()) {
          break;
        }
        registry.providers.add(it.next());
      } catch (ServiceConfigurationError e) {
        // A broken jar must not hide the others: remember it and report it when selection fails.
        LOG.debug("could not load a {} provider", kind, e);
        registry.loadFailures.add(e);
      }
    }
    return registry;
  }

  /** A registry holding exactly the given providers (tests, embedding without ServiceLoader). */
  public static <P extends MxProvider> ProviderRegistry<P> of(
      Class<P> type,
      String kind,
      String property,
      String envVar,
      Settings settings,
      List<P> providers) {
    ProviderRegistry<P> registry = new ProviderRegistry<>(type, kind, property, envVar, settings);
    registry.providers.addAll(providers);
    return registry;
  }

  /** Adds a provider by hand; a provider of the same name is replaced. */
  public void register(P provider) {
    providers.removeIf(p -> p.name().equals(provider.name()));
    providers.add(provider);
  }

  /** Removes a provider by hand. */
  public void deregister(P provider) {
    providers.remove(provider);
  }

  public Class<P> type() {
    return type;
  }

  /** Every provider found, available or not, in selection order. */
  public List<P> providers() {
    List<P> all = new ArrayList<>(providers);
    all.sort(ORDER);
    return List.copyOf(all);
  }

  /** The available providers, in selection order. */
  public List<P> available() {
    return providers().stream().filter(ProviderRegistry::safeAvailable).toList();
  }

  /** The name requested through the property or environment variable, or null. */
  public String requestedName() {
    String name = settings.get(property, envVar);
    return name == null || name.isBlank() ? null : name.trim();
  }

  /**
   * The provider named by the override, else the best available one.
   *
   * @throws NoProviderException when the named provider is unknown or unavailable, or none is
   *     available
   */
  public P select() {
    String requested = requestedName();
    if (requested != null && !requested.equalsIgnoreCase("auto")) {
      return select(requested);
    }
    List<P> usable = available();
    if (usable.isEmpty()) {
      throw new NoProviderException(
          "no "
              + kind
              + " provider is available. "
              + describeAll()
              + " Add a "
              + kind
              + " artifact to the class path (e.g. "
              + suggestion()
              + ").");
    }
    return usable.get(0);
  }

  /**
   * The provider of this name ({@code auto} means {@link #select()} without the override).
   *
   * @throws NoProviderException naming the provider and listing what was found
   */
  public P select(String name) {
    if (name.equalsIgnoreCase("auto")) {
      List<P> usable = available();
      if (usable.isEmpty()) {
        throw new NoProviderException("no " + kind + " provider is available. " + describeAll());
      }
      return usable.get(0);
    }
    for (P p : providers()) {
      if (p.name().equalsIgnoreCase(name)) {
        if (!safeAvailable(p)) {
          Throwable cause = safeCause(p);
          NoProviderException e =
              new NoProviderException(
                  kind
                      + " '"
                      + p.name()
                      + "' was requested but is unavailable: "
                      + describeCause(cause)
                      + ". "
                      + describeAll());
          if (cause != null) {
            e.initCause(cause);
          }
          throw e;
        }
        return p;
      }
    }
    throw new NoProviderException(
        "unknown "
            + kind
            + " '"
            + name
            + "'"
            + overrideSource(name)
            + ". "
            + describeAll()
            + " Add the artifact that provides it to the class path.");
  }

  private String overrideSource(String name) {
    String fromProperty = settings.property(property);
    if (fromProperty != null && fromProperty.trim().equalsIgnoreCase(name)) {
      return " (from -D" + property + ")";
    }
    String fromEnv = settings.env(envVar);
    if (fromEnv != null && fromEnv.trim().equalsIgnoreCase(name)) {
      return " (from " + envVar + ")";
    }
    return "";
  }

  /** One sentence listing every provider found with its availability and cause. */
  public String describeAll() {
    List<P> all = providers();
    StringBuilder sb = new StringBuilder();
    if (all.isEmpty()) {
      sb.append("No ").append(kind).append(" providers were found on the class path.");
    } else {
      sb.append("Found ").append(kind).append(" providers: ");
      for (int i = 0; i < all.size(); i++) {
        P p = all.get(i);
        if (i > 0) {
          sb.append("; ");
        }
        sb.append(p.name()).append(" (priority ").append(p.priority()).append(", ");
        if (safeAvailable(p)) {
          sb.append("available");
        } else {
          sb.append("unavailable: ").append(describeCause(safeCause(p)));
        }
        sb.append(", from ").append(p.artifact()).append(')');
      }
      sb.append('.');
    }
    for (ServiceConfigurationError e : loadFailures) {
      sb.append(" A provider failed to load: ").append(e.getMessage()).append('.');
    }
    return sb.toString();
  }

  private String suggestion() {
    return "dev.mx:mx-" + kind.toLowerCase(Locale.ROOT).replace(' ', '-') + "-*";
  }

  private static String describeCause(Throwable cause) {
    if (cause == null) {
      return "no cause reported";
    }
    String m = cause.getMessage();
    return cause.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  private static boolean safeAvailable(MxProvider p) {
    try {
      return p.isAvailable();
    } catch (RuntimeException | LinkageError e) {
      LOG.debug("provider {} threw from isAvailable()", p.getClass().getName(), e);
      return false;
    }
  }

  private static Throwable safeCause(MxProvider p) {
    try {
      return p.unavailabilityCause();
    } catch (RuntimeException | LinkageError e) {
      return e;
    }
  }
}
