package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import java.time.Duration;

/**
 * Finds the publishers' sources for a receiver (ModelExpress; ARCHITECTURE §7.5: READY tables,
 * merged replicas). The metadata stores provide real ones; tests and embedders pass {@link #fixed
 * fixed} sources.
 */
@FunctionalInterface
@Stable
public interface SourceDiscovery {

  /**
   * Blocks until the expected publishers are discovered or {@code timeout} passes (then throws).
   */
  DiscoveredSources discover(Duration timeout);

  /** Discovery that returns the given sources. */
  static SourceDiscovery fixed(DiscoveredSources sources) {
    return timeout -> sources;
  }
}
