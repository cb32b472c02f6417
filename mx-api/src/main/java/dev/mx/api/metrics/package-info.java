/**
 * The metrics SPI: {@link dev.mx.api.metrics.RefitListener} receives what a refit did (steps,
 * stage times, bytes, verification outcomes, version waits and leases) as plain values, so a
 * binding (JFR, Micrometer, a test) can turn them into events or meters without parsing logs.
 * Listeners are found with {@link java.util.ServiceLoader} ({@link RefitListeners#discovered()})
 * or given to a receiver's builder.
 */
package dev.mx.api.metrics;
