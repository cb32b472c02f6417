package dev.mx.api.spi;

/**
 * The contract every pluggable backend's provider follows (after grpc-java's providers). A provider
 * is listed in {@code META-INF/services/<provider type>} of its jar. It must be cheap to construct
 * and must never throw from these methods: a backend that cannot work reports it through {@link
 * #isAvailable()} and {@link #unavailabilityCause()}.
 */
public abstract class MxProvider {

  /** Short unique name used for selection and in reports, e.g. {@code mem}, {@code ucx}. */
  public abstract String name();

  /** Whether this backend can work in this process. Never throws. */
  public abstract boolean isAvailable();

  /**
   * Why {@link #isAvailable()} is false (the real failure, never a string), or null when available.
   */
  public Throwable unavailabilityCause() {
    return null;
  }

  /** Preference among available providers, 0 (last resort) to 10 (best). Default 5. */
  public int priority() {
    return 5;
  }

  /** The Maven artifact that ships this provider, named in errors that suggest what to add. */
  public String artifact() {
    return "dev.mx:mx-" + name();
  }

  @Override
  public String toString() {
    return getClass().getSimpleName()
        + "["
        + name()
        + ", priority "
        + priority()
        + (isAvailable() ? ", available]" : ", unavailable]");
  }
}
