/**
 * The {@code file:} metadata store: publishers and receivers of one host meet in a directory, with
 * atomic write-then-rename updates and liveness from heartbeat timestamps; no server.
 */
package dev.mx.metadata.file;
