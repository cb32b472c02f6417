package dev.mx.examples;

import dev.mx.api.metrics.RefitListeners;
import dev.mx.micrometer.MicrometerRefitListener;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The in-process example with its refits metered: a {@link MicrometerRefitListener} registered for
 * the whole JVM records into a Prometheus registry, and {@code main} prints the scrape a Prometheus
 * server would read from {@code /metrics}.
 */
public final class MetricsExample {
  private MetricsExample() {}

  /** Runs the in-process example metered and returns the Prometheus scrape. */
  public static String run() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (RefitListeners.Registration metered =
        RefitListeners.register(new MicrometerRefitListener(registry))) {
      InProcessExample.run();
    }
    String scrape = registry.scrape();
    registry.close();
    return scrape;
  }

  public static void main(String[] args) throws Exception {
    System.out.print(run());
  }
}
