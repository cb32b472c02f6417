package dev.mx.bench.suite;

/**
 * What the central service of a simulated control plane did in one phase: calls it answered (for
 * Redis, the commands it executed, script-internal ones included), its time in them and the bytes
 * moved to and from it.
 */
record ServiceCost(long calls, long usec, long bytes) {
  static final ServiceCost NONE = new ServiceCost(0, 0, 0);

  ServiceCost plus(ServiceCost o) {
    return new ServiceCost(calls + o.calls, usec + o.usec, bytes + o.bytes);
  }
}
