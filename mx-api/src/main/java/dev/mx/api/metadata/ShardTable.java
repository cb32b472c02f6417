package dev.mx.api.metadata;

import java.util.List;
import java.util.Objects;

/**
 * A publisher's shard table ({@code mx.reshard.shard_table.v1}, ModelExpress; ARCHITECTURE §7.1).
 *
 * @param agentName the publisher's agent name; also its transport session
 * @param metadataEndpoint {@code host:port} for a peer-metadata handshake, or {@code ""}
 * @param agentMetadata the transport's peer metadata blob ({@code agent_meta_b64} decoded); for a
 *     publisher serving several transports a {@code TransportBundle} (mx-transport-kit), whose
 *     primary blob the codec writes as {@code agent_meta_b64} and the others in an optional key
 * @param tensors the published tensors
 * @param publisherStep the training step the table describes, or null when unknown (0 is a real
 *     step)
 * @param topology the trainer topology the publisher declares, or null (ModelExpress tables carry
 *     none)
 * @param replicas the boxes this publisher holds as replicas of another publisher's, listed apart
 *     from {@code tensors} (ModelExpress tables list none: a reader that does not know them reads
 *     every box from its owner)
 */
public record ShardTable(
    String agentName,
    String metadataEndpoint,
    byte[] agentMetadata,
    List<PublishedTensor> tensors,
    Long publisherStep,
    PublisherTopology topology,
    List<ReplicaShard> replicas) {

  /** The schema string of the JSON encoding. */
  public static final String SCHEMA = "mx.reshard.shard_table.v1";

  public ShardTable {
    Objects.requireNonNull(agentName, "agent_name");
    metadataEndpoint = metadataEndpoint == null ? "" : metadataEndpoint;
    agentMetadata = agentMetadata == null ? new byte[0] : agentMetadata.clone();
    tensors = List.copyOf(tensors);
    replicas = replicas == null ? List.of() : List.copyOf(replicas);
  }

  /** A table that lists no replicas apart. */
  public ShardTable(
      String agentName,
      String metadataEndpoint,
      byte[] agentMetadata,
      List<PublishedTensor> tensors,
      Long publisherStep,
      PublisherTopology topology) {
    this(agentName, metadataEndpoint, agentMetadata, tensors, publisherStep, topology, List.of());
  }

  /** A table that declares no topology. */
  public ShardTable(
      String agentName,
      String metadataEndpoint,
      byte[] agentMetadata,
      List<PublishedTensor> tensors,
      Long publisherStep) {
    this(agentName, metadataEndpoint, agentMetadata, tensors, publisherStep, null);
  }

  /** The same table declaring {@code t}. */
  public ShardTable withTopology(PublisherTopology t) {
    return new ShardTable(
        agentName, metadataEndpoint, agentMetadata, tensors, publisherStep, t, replicas);
  }

  @Override
  public byte[] agentMetadata() {
    return agentMetadata.clone();
  }

  /**
   * Number of tensor entries and replicas; a table with none never counts toward a discovery
   * quorum.
   */
  public int entryCount() {
    return tensors.size() + replicas.size();
  }
}
