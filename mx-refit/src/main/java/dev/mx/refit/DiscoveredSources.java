package dev.mx.refit;

import dev.mx.api.annotation.Stable;
import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import dev.mx.plan.merge.ReplicaAssignment;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * What discovery found: the merged source tensors (name to shape, dtype and shards, each box once:
 * its owner's offer), per transport session the peer metadata blob the receiver passes to {@code
 * Transport.connect} for sessions its plan reads from, the one training step every table carried
 * (null when the tables carry none), and the replicas: per tensor the other publishers' offers of
 * boxes {@code sources} holds, which {@link #spreadFor} spreads a receiver's reads over.
 */
@Stable
public record DiscoveredSources(
    Map<String, SourceInfo> sources,
    Map<String, byte[]> peerMetadata,
    Long step,
    Map<String, List<Shard>> replicas) {

  public DiscoveredSources {
    sources = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(sources));
    peerMetadata = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(peerMetadata));
    replicas = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(replicas));
  }

  /** Sources without replicas. */
  public DiscoveredSources(
      Map<String, SourceInfo> sources, Map<String, byte[]> peerMetadata, Long step) {
    this(sources, peerMetadata, step, Map.of());
  }

  /** Sources of no known step. */
  public DiscoveredSources(Map<String, SourceInfo> sources, Map<String, byte[]> peerMetadata) {
    this(sources, peerMetadata, null);
  }

  /**
   * What receiver {@code receiverRank} reads: each box from one live holder, the owner or a
   * replica, chosen alike by every receiver so trainer ranks serve balanced bytes ({@link
   * ReplicaAssignment}); without replicas, these sources.
   *
   * @param live whether a publisher session can be read (dead replicas are skipped)
   */
  public DiscoveredSources spreadFor(int receiverRank, Predicate<String> live) {
    if (replicas.isEmpty()) {
      return this;
    }
    return new DiscoveredSources(
        ReplicaAssignment.assign(sources, replicas, receiverRank, live), peerMetadata, step);
  }
}
