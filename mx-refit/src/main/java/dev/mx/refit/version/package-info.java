/**
 * The two sides of the weight-version protocol (docs/VERSIONS.md) on top of {@code Publisher} and
 * {@code Receiver}: a trainer publishing each step as a version from two buffer sets, and a
 * receiver following READY versions under a renewed lease.
 */
package dev.mx.refit.version;
