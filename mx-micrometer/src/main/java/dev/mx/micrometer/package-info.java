/**
 * The Micrometer binding of the metrics SPI: {@link dev.mx.micrometer.MicrometerRefitListener}
 * turns refits into meters of the application's {@code MeterRegistry}, which exports them to
 * Prometheus, Datadog, OTLP or whatever registry the application chose.
 */
package dev.mx.micrometer;
