/**
 * The {@code memory:} metadata store: publishers and receivers of one JVM, sharing a directory by
 * name.
 */
package dev.mx.metadata.memory;
