package dev.mx.api.metadata;

/**
 * Where a weight version is in its life (ModelExpress; ARCHITECTURE §7.5): STAGING until every
 * expected publisher slot has landed, READY from the moment the last one lands (atomically),
 * RELEASING once it is superseded and its publishers want the memory back. A RELEASING version with
 * no live lease is reclaimed slot by slot and then gone: it is no longer in the store.
 */
public enum WeightVersionState {
  STAGING,
  READY,
  RELEASING
}
