package dev.mx.api.refit;

import dev.mx.api.annotation.Experimental;
import dev.mx.api.transport.Transport;
import java.time.Duration;
import java.util.Map;

/**
 * How a refit's reads go on the wire: {@code fused} issues all three groups as one batch, {@code
 * phased} as up to three. Integrators may bind their own (a decorator of a built-in one, for
 * example). The receiver decides which reads go when: when it pipelines, it calls {@link #transfer}
 * once per landing batch of one peer (the groups cut to that batch) and starts the work that waits
 * for those reads as soon as the call returns; otherwise once with every read.
 */
@Experimental("wire policies may gain stages (e.g. staged shards)")
public interface WirePolicy {

  /** The policy name, e.g. {@code fused}. */
  String name();

  /**
   * Issues the reads, returning once all of them landed, and returns the wire stage timings in
   * seconds, keyed by stage name (e.g. {@code wire_fused_s}); the receiver sums them over the calls
   * of one refit. A phase that did not run has no key.
   */
  Map<String, Double> transfer(Transport transport, WireGroups groups, Duration timeout);
}
