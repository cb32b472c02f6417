package dev.mx.api.metadata;

/**
 * A publisher slot's liveness inside a version: READY when it landed, STALE once its publisher said
 * it is going away (shutdown, a failed transport). A version with a STALE slot must not be read.
 */
public enum SlotStatus {
  READY,
  STALE
}
