package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.SourceInfo;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What discovery found: the merged source tensors (name to shape, dtype and shards), per transport
 * session the peer metadata blob the receiver passes to {@code Transport.connect} for sessions its
 * plan reads from, and the one training step every table carried (null when the tables carry none).
 */
@Stable
public record DiscoveredSources(
    Map<String, SourceInfo> sources, Map<String, byte[]> peerMetadata, Long step) {

  public DiscoveredSources {
    sources = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(sources));
    peerMetadata = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(peerMetadata));
  }

  /** Sources of no known step. */
  public DiscoveredSources(Map<String, SourceInfo> sources, Map<String, byte[]> peerMetadata) {
    this(sources, peerMetadata, null);
  }
}
