/**
 * The JSON request and plan format of {@code mx plan} (ARCHITECTURE §5.3), snake_case on the wire.
 */
package dev.mx.cli.plan;
