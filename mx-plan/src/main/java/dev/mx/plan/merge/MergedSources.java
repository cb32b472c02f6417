package dev.mx.plan.merge;

import dev.mx.api.plan.SourceInfo;
import java.util.Collections;
import java.util.LinkedHashMap;
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
 */
public record MergedSources(
    Map<String, SourceInfo> sources,
    Map<String, String> sessionToAgent,
    Map<String, Integer> sessionToDevice,
    Map<String, String> agentEndpoints) {

  public MergedSources {
    sources = Collections.unmodifiableMap(new LinkedHashMap<>(sources));
    sessionToAgent = Collections.unmodifiableMap(new LinkedHashMap<>(sessionToAgent));
    sessionToDevice = Collections.unmodifiableMap(new LinkedHashMap<>(sessionToDevice));
    agentEndpoints = Collections.unmodifiableMap(new LinkedHashMap<>(agentEndpoints));
  }
}
