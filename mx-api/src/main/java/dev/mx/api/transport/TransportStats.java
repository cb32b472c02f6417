package dev.mx.api.transport;

/** Cumulative counters of a transport since it was created. */
public record TransportStats(long bytesMoved, long readsIssued, long batches) {}
