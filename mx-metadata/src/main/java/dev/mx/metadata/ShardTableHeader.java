package dev.mx.metadata;

import dev.mx.api.annotation.Internal;
import java.util.Objects;

/**
 * A shard table decoded without its tensors (ModelExpress; ARCHITECTURE §7.1 {@code
 * unwrap(with_tensors=false)}): everything but the shard objects, plus how many tensor entries the
 * table holds.
 *
 * @param agentName the publisher's agent name (its transport session)
 * @param metadataEndpoint {@code host:port}, or {@code ""}
 * @param agentMetadata the transport's peer metadata
 * @param publisherStep the training step, or null when unknown
 * @param entryCount the number of tensor entries; a table with none never counts toward a quorum
 */
@Internal
public record ShardTableHeader(
    String agentName,
    String metadataEndpoint,
    byte[] agentMetadata,
    Long publisherStep,
    int entryCount) {

  public ShardTableHeader {
    Objects.requireNonNull(agentName, "agent_name");
    Objects.requireNonNull(metadataEndpoint, "metadata_endpoint");
    agentMetadata = agentMetadata.clone();
  }

  @Override
  public byte[] agentMetadata() {
    return agentMetadata.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ShardTableHeader h
        && agentName.equals(h.agentName)
        && metadataEndpoint.equals(h.metadataEndpoint)
        && java.util.Arrays.equals(agentMetadata, h.agentMetadata)
        && Objects.equals(publisherStep, h.publisherStep)
        && entryCount == h.entryCount;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        agentName,
        metadataEndpoint,
        java.util.Arrays.hashCode(agentMetadata),
        publisherStep,
        entryCount);
  }

  @Override
  public String toString() {
    return "ShardTableHeader["
        + agentName
        + ", endpoint '"
        + metadataEndpoint
        + "', "
        + agentMetadata.length
        + " metadata bytes, step "
        + publisherStep
        + ", "
        + entryCount
        + " entries]";
  }
}
