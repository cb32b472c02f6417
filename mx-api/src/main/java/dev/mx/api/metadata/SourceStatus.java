package dev.mx.api.metadata;

/** Liveness of a published source. */
public enum SourceStatus {
  INITIALIZING,
  READY,
  STALE
}
