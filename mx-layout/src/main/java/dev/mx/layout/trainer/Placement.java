package dev.mx.layout.trainer;

/**
 * Whether a Megatron parameter is a shard of its global tensor along one axis, or a full replica.
 */
public enum Placement {
  SHARD,
  REPLICATE
}
