/**
 * The metrics SPI: {@link dev.mx.api.metrics.RefitListener} receives what a refit did (steps, stage
 * times, bytes, verification outcomes, version waits and leases) as plain values, so a binding
 * (JFR, Micrometer, a test) can turn them into events or meters without parsing logs. Listeners are
 * found with {@link java.util.ServiceLoader} ({@code META-INF/services}), registered for the whole
 * JVM ({@link dev.mx.api.metrics.RefitListeners#register}) or given to one receiver's builder.
 */
package dev.mx.api.metrics;
