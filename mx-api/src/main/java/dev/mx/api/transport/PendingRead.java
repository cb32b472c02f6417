package dev.mx.api.transport;

/** A batch of reads to one peer that was posted and not yet awaited. */
public interface PendingRead {

  /** The peer the batch reads from. */
  String session();

  /** Number of (non-empty) descriptors in the batch. */
  int descriptorCount();

  /** Bytes the batch moves. */
  long bytes();
}
