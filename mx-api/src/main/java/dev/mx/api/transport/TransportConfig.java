package dev.mx.api.transport;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * How to create a transport endpoint.
 *
 * @param session the name peers use for this endpoint (ModelExpress' agent name)
 * @param timeout the default per-call timeout of {@link Transport#read}
 * @param properties backend-specific options (e.g. {@code ucx.tls})
 */
public record TransportConfig(String session, Duration timeout, Map<String, String> properties) {

  public TransportConfig {
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(timeout, "timeout");
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("transport timeout must be positive, got " + timeout);
    }
    properties = Map.copyOf(properties);
  }

  /** A config with the given session, a 120 s timeout and no options. */
  public static TransportConfig of(String session) {
    return new TransportConfig(session, Duration.ofSeconds(120), Map.of());
  }

  /** A config with a random session name. */
  public static TransportConfig defaults() {
    return of("mx-" + UUID.randomUUID().toString().substring(0, 8));
  }

  public TransportConfig withTimeout(Duration t) {
    return new TransportConfig(session, t, properties);
  }

  public String property(String key, String defaultValue) {
    return properties.getOrDefault(key, defaultValue);
  }
}
