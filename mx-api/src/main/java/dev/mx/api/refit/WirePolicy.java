package dev.mx.api.refit;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.transport.Transport;
import java.time.Duration;
import java.util.Map;

/**
 * How a refit's reads go on the wire: {@code fused} issues all three groups as one batch, {@code
 * phased} as up to three. Integrators may bind their own.
 */
@Experimental("wire policies may gain stages (e.g. staged shards)")
public interface WirePolicy {

  /** The policy name, e.g. {@code fused}. */
  String name();

  /** Whether exact descriptors are issued in the same batch as full pulls and converts. */
  boolean fused();

  /**
   * Issues the reads and returns the wire stage timings in seconds, keyed by stage name (e.g.
   * {@code wire_fused_s}); a phase that did not run has no key.
   */
  Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout);
}
