package dev.mx.plan.merge;

import dev.mx.api.plan.Shard;
import dev.mx.api.plan.SourceInfo;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The planner's view of every discovered publisher after replica merge (ModelExpress; ARCHITECTURE
 * §7.5 {@code build_sources}).
 *
 * @param sources every tensor by name, in first-seen order; a shard's session is its publisher's
 *     agent name
 * @param sessionToAgent the agent behind each session (sessions are agent names, so this is the
 *     identity)
 * @param sessionToDevice the publisher's device id for each session (first offer wins)
 * @param agentEndpoints each agent's {@code host:port} metadata endpoint ({@code ""} when it
 *     published none)
 * @param replicas per tensor, the later offers of boxes {@code sources} already holds (another
 *     publisher's replica of the same offset and shape), in table order; see {@link
 *     ReplicaAssignment}
 */
public record MergedSources(
    Map<String, SourceInfo> sources,
    Map<String, String> sessionToAgent,
    Map<String, Integer> sessionToDevice,
    Map<String, String> agentEndpoints,
    Map<String, List<Shard>> replicas) {

  /** Sources without replicas. */
  public MergedSources(
      Map<String, SourceInfo> sources,
      Map<String, String> sessionToAgent,
      Map<String, Integer> sessionToDevice,
      Map<String, String> agentEndpoints) {
    this(sources, sessionToAgent, sessionToDevice, agentEndpoints, Map.of());
  }

  public MergedSources {
    sources = Collections.unmodifiableMap(new LinkedHashMap<>(sources));
    sessionToAgent = Collections.unmodifiableMap(new LinkedHashMap<>(sessionToAgent));
    sessionToDevice = Collections.unmodifiableMap(new LinkedHashMap<>(sessionToDevice));
    agentEndpoints = Collections.unmodifiableMap(new LinkedHashMap<>(agentEndpoints));
    Map<String, List<Shard>> copied = new LinkedHashMap<>();
    replicas.forEach((name, shards) -> copied.put(name, List.copyOf(shards)));
    replicas = Collections.unmodifiableMap(copied);
  }

  /**
   * The sources receiver {@code receiverRank} reads, spread over the replicas ({@link
   * ReplicaAssignment}).
   */
  public Map<String, SourceInfo> assignedTo(int receiverRank) {
    return ReplicaAssignment.assign(sources, replicas, receiverRank);
  }
}
