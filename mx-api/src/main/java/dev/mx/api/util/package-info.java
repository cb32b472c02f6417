/**
 * Small shared helpers: reading configuration from system properties and the environment at call
 * time, and closing many resources with aggregated failures.
 */
package dev.mx.api.util;
